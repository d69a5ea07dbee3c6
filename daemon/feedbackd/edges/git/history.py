"""History as one commit held it, read in bulk: the trailers of the commits behind it, the files
of one of its folders, and many objects at once. What `feedbackd export` reads, never the work
tree: a commit's files come from git's object store.

Each of these is one git process, however many commits or files it covers: an export of an
agent with a hundred thousand decisions walks the history once and reads its files a chunk at a
time (`history_of` in edges/git/repo.py opens it on a repository).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime

from feedbackd.core.commitmsg import EVENT_KEY, LogEntry, log_entry
from feedbackd.core.timeutil import iso_ms
from feedbackd.edges.git.adds import Adds, adds_in_line
from feedbackd.edges.git.batch import GitBatch, batch_name, within_a_pipe
from feedbackd.edges.git.runner import GitRunner, added_files, rel_path, revision

_LONGEST_NAME = 4096  # a path and a revision: far longer than any path in a workspace
# Between the trailers of one commit, and between commits (a message never holds either).
_FIELD, _COMMIT = b"\x1f", b"\x1e"
# `events_since`: the side of `old...new` (`<` or `>`), then what `log_entry` reads, with the
# author's time: a rebase keeps it, where it gives a commit a new committer time.
_SIDES_FORMAT = "%m%H%x00%aI%x00%an <%ae>%x00%B%x00"
# `events_to_head` reads this many commits one by one from the long-lived cat-file (no process
# started) before it asks `git log` instead.
_WALK_MAX = 64


class History:
    """Reading the history of a commit (`history_of(repo)`)."""

    def __init__(self, git: GitRunner, batch: GitBatch) -> None:
        self._git = git
        self._batch = batch

    def trailers(
        self,
        commit: str,
        keys: Sequence[str],
        grep: str,
        *,
        after: str | None = None,
        limit: int | None = None,
    ) -> Iterator[tuple[str, dict[str, str]]]:
        """(sha, {key: value}) for each commit of `commit`'s history, newest first, whose message
        matches the extended regular expression `grep` (a line of it), with the last value of
        each of `keys` it carries (keys as given; missing ones absent). git prints the trailers
        alone, so a long history costs a few bytes a commit, not its messages. `after`: only the
        commits that revision does not hold; `limit`: only the first so many (in the same order
        as the whole walk: its start)."""
        wanted = ",".join(f"key={key}" for key in keys)
        form = f"--format=%H%x00%(trailers:{wanted},unfold,separator=%x1f)%x1e"
        bounds = ([f"^{revision(after)}"] if after else []) + ([f"-n{limit}"] if limit else [])
        args = ["log", "-E", "-i", f"--grep={grep}", form, *bounds, revision(commit), "--"]
        out = self._git.run(args)
        by_lower = {key.lower(): key for key in keys}
        # Read record by record from git's bytes: a decoded copy split in a list of strings
        # would hold the whole walk three times over.
        start = 0
        while (end := out.find(_COMMIT, start)) >= 0:
            sha, _, text = out[start:end].strip(b"\n").partition(b"\0")
            start = end + 1
            if sha:
                yield sha.decode("ascii"), _trailer_values(text, by_lower)

    def events_since(self, old: str | None, new: str) -> list[LogEntry]:
        """The learning-history commits that `new` holds and `old` did not, newest first: what
        reached the branch between the two, whoever committed it (every one `new` holds when
        `old` is None). A rebase (a pull that replays the local commits onto the remote's)
        copies commits `old` held: a copy, with the same author, author time and subject as
        one of those, is not new. The entries' dates are author times."""
        span = [f"{revision(old)}...{revision(new)}"] if old else [revision(new)]
        args = ["log", "-i", f"--grep=^{EVENT_KEY}:", "--left-right", f"--format={_SIDES_FORMAT}"]
        sides: dict[str, list[LogEntry]] = {"<": [], ">": []}
        for marked, date, author, message in log_records(self._git.run([*args, *span, "--"])):
            entry = log_entry(marked[1:], date, author, message)
            if entry is not None and marked[:1] in sides:
                sides[marked[:1]].append(entry)
        held = {_same(entry) for entry in sides["<"]}
        return [entry for entry in sides[">"] if _same(entry) not in held]

    def events_to_head(self, old: str | None) -> tuple[str | None, list[LogEntry]]:
        """HEAD, and the learning-history commits that reached it since `old`, as
        `events_since`. The usual stretch, a few commits each on top of the one before down to
        `old`, is read from the long-lived cat-file and starts no git process (the daemon asks
        after every decision); a merge, a rebase or a long stretch is asked of `git log`."""
        head = self._batch.read("HEAD")
        if head is None or head.kind != "commit":
            return None, []
        found: list[LogEntry] = []
        commit = head
        for _ in range(_WALK_MAX):
            if commit.sha == old:
                return head.sha, found
            parents, entry = _commit_entry(commit.sha, commit.content)
            found += [entry] if entry is not None else []
            if not parents and old is None:
                return head.sha, found  # the first commit: all of it is new
            parent = self._batch.read(parents[0]) if len(parents) == 1 else None
            if parent is None or parent.kind != "commit":
                break
            commit = parent
        return head.sha, self.events_since(old, head.sha)

    def head(self) -> str | None:
        """HEAD's commit, through the long-lived cat-file (no git process); None on a branch
        with no commits yet."""
        found = self._batch.read("HEAD")
        return found.sha if found is not None and found.kind == "commit" else None

    def last_adds(self, commit: str, under: str, keep: Callable[[str], bool]) -> dict[str, str]:
        """path → the sha of the newest commit of `commit`'s history that added it, for every
        path below `under` that `keep` accepts: one walk, however many paths."""
        return last_adds(self._git, rel_path(under), keep, commit)

    def adds_since(self, old: str, new: str, under: str, folder: str) -> list[Adds] | None:
        """For each commit after `old` up to `new`, newest first, path → that commit for the
        files directly in an `under/*/folder/` it added; None when `new` is not a few commits
        of one parent each on top of `old` (edges/git/adds.py): walk with last_adds."""
        found = self._batch.read(new)
        if found is None or found.kind != "commit":
            return None
        return adds_in_line(self._batch, old, found, under, folder)

    def first_adds(self, commit: str, folders: Sequence[str]) -> dict[str, str]:
        """path → the sha of the oldest commit of `commit`'s history that added it, for every
        file ever added below `folders`: one walk, however many files."""
        args = ["log", "--no-renames", "--diff-filter=A", "--format=%x01%H", "--name-only", "-z"]
        specs = [rel_path(folder).rstrip("/") + "/" for folder in folders]
        out = self._git.run([*args, revision(commit), "--", *specs])
        # newest first: the oldest is written last
        return {name: sha for sha, name in added_files(out)}

    def files_in(self, commit: str, folder: str) -> dict[str, str]:
        """name → object id of each file directly in `folder` at `commit` (none when it has no
        such folder): one `ls-tree`, where asking for each file by its path would parse the
        folder's tree once a file."""
        args = ["ls-tree", "-z", revision(commit), "--", rel_path(folder).rstrip("/") + "/"]
        status, out, _ = self._git.exec(args)
        found: dict[str, str] = {}
        start = 0
        while status == 0 and (end := out.find(b"\0", start)) >= 0:
            meta, _, path = out[start:end].partition(b"\t")
            start = end + 1
            fields = meta.split()
            if len(fields) == 3 and fields[1] == b"blob":
                name = path.rpartition(b"/")[2].decode("utf-8", errors="surrogateescape")
                found[name] = fields[2].decode("ascii")
        return found

    def is_folder(self, commit: str, folder: str) -> bool:
        """True when `folder` is a folder at `commit`."""
        found = self._batch.read(f"{revision(commit)}:{rel_path(folder)}")
        return found is not None and found.kind == "tree"

    def blob(self, name: str) -> bytes | None:
        """The content of the one object `name` names, through the long-lived reader; None for
        what names no file (or cannot be named: a line break)."""
        found = None if "\n" in name else self._batch.read(name)
        return found.content if found is not None and found.kind == "blob" else None

    def blobs(self, names: Sequence[str]) -> Iterator[bytes | None]:
        """The content of each object `names` names (a sha, or `commit:path`), in order; None
        for what names no file (or cannot be named: a line break). A `cat-file` answers each
        group of names that fits in a pipe, one object held at a time, however many are
        named."""
        for group in _groups(names):
            for found in self._batch.read_through(group):
                yield found.content if found is not None and found.kind == "blob" else None


def last_adds(
    git: GitRunner, under: str, keep: Callable[[str], bool], commit: str = "HEAD"
) -> dict[str, str]:
    """path → the sha of the newest commit of `commit`'s history that added it, for the paths
    below `under` that `keep` accepts."""
    args = ["log", "--no-renames", "--diff-filter=A", "--format=%x01%H", "--name-only", "-z"]
    found: dict[str, str] = {}
    for sha, name in added_files(git.run([*args, revision(commit), "--", under])):
        if name not in found and keep(name):
            found[name] = sha
    return found


def _commit_entry(sha: str, content: bytes) -> tuple[list[str], LogEntry | None]:
    """A raw commit object's parents, and its learning-history entry (None for another commit),
    dated by its author time as `events_since` dates them."""
    headers, _, message = content.partition(b"\n\n")
    parents: list[str] = []
    author, when = "", ""
    for line in headers.split(b"\n"):
        key, _, value = line.partition(b" ")
        if key == b"parent":
            parents.append(value.decode("ascii", errors="replace"))
        elif key == b"author":
            ident, _, stamp = value.rpartition(b">")
            seconds = stamp.split()[0] if stamp.split() else b""
            author = (ident + b">").decode("utf-8", errors="replace")
            if seconds.isdigit():
                when = iso_ms(datetime.fromtimestamp(int(seconds), UTC))
    text = message.decode("utf-8", errors="replace")
    return parents, log_entry(sha, when, author, text)


def _same(entry: LogEntry) -> tuple[str | None, str, str]:
    """What a rebased copy of a commit keeps: its author, author time and subject."""
    return entry.curator, entry.date, entry.subject


def _trailer_values(text: bytes, by_lower: dict[str, str]) -> dict[str, str]:
    """{key: value} of git's `Key: value` lines (separated by _FIELD) for the keys asked."""
    found: dict[str, str] = {}
    for line in text.split(_FIELD):
        key, colon, value = line.decode("utf-8", errors="replace").partition(":")
        name = by_lower.get(key.strip().lower())
        if colon and name is not None:
            found[name] = value.strip()
    return found


def _groups(names: Sequence[str]) -> Iterator[list[str]]:
    """The names in groups that fit in a pipe at once (READ_THROUGH_BYTES); a name that cannot
    be asked (a line break, or too long to be a path) becomes an empty one, which names
    nothing."""
    return within_a_pipe(
        [
            "" if "\n" in name or len(batch_name(name)) + 1 > _LONGEST_NAME else name
            for name in names
        ]
    )


def log_records(out: bytes) -> Iterator[tuple[str, str, str, str]]:
    """(commit, date, author, message) of each commit of a `git log` whose format ends each of
    those four fields with a NUL (`%H%x00%cI%x00%an <%ae>%x00%B%x00`, or `%m%H` first)."""
    parts = out.decode("utf-8", errors="replace").split("\0")
    for index in range(0, len(parts) - 3, 4):
        commit, date, author, message = parts[index : index + 4]
        yield commit.strip(), date, author, message

"""History as one commit held it, read in bulk: the trailers of the commits behind it, the files
of one of its folders, and many objects at once. What `feedbackd export` reads, never the work
tree: a commit's files come from git's object store.

Each of these is one git process, however many commits or files it covers: an export of an
agent with a hundred thousand decisions walks the history once and reads its files a chunk at a
time (GitRepo.history is the door).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from feedbackd.edges.git.batch import GitBatch, batch_header, batch_name
from feedbackd.edges.git.runner import GitRunner, rel_path, revision
from feedbackd.edges.git.tree import TREE_MODE, parse_tree

# Between the trailers of one commit, and between commits (a message never holds either).
_FIELD, _COMMIT = "\x1f", "\x1e"


class History:
    """Reading the history of a commit (GitRepo.history)."""

    def __init__(self, git: GitRunner, batch: GitBatch) -> None:
        self._git = git
        self._batch = batch

    def trailers(
        self, commit: str, keys: Sequence[str], grep: str
    ) -> Iterator[tuple[str, dict[str, str]]]:
        """(sha, {key: value}) for each commit of `commit`'s history, newest first, whose message
        matches the extended regular expression `grep` (a line of it), with the last value of
        each of `keys` it carries (keys as given; missing ones absent). git prints the trailers
        alone, so a long history costs a few bytes a commit, not its messages."""
        wanted = ",".join(f"key={key}" for key in keys)
        form = f"--format=%H%x00%(trailers:{wanted},unfold,separator=%x1f)%x1e"
        args = ["log", "-E", "-i", f"--grep={grep}", form, revision(commit), "--"]
        out = self._git.run(args).decode("utf-8", errors="replace")
        by_lower = {key.lower(): key for key in keys}
        for record in out.split(_COMMIT):
            sha, _, text = record.strip("\n").partition("\0")
            if not sha:
                continue
            found: dict[str, str] = {}
            for line in text.split(_FIELD):
                key, colon, value = line.partition(":")
                name = by_lower.get(key.strip().lower())
                if colon and name is not None:
                    found[name] = value.strip()
            yield sha, found

    def first_adds(self, commit: str, folders: Sequence[str]) -> dict[str, str]:
        """path → the sha of the oldest commit of `commit`'s history that added it, for every
        file ever added below `folders`: one walk, however many files."""
        args = ["log", "--no-renames", "--diff-filter=A", "--format=%x01%H", "--name-only", "-z"]
        specs = [rel_path(folder).rstrip("/") + "/" for folder in folders]
        out = self._git.run([*args, revision(commit), "--", *specs])
        found: dict[str, str] = {}
        for record in out.decode("utf-8", errors="surrogateescape").split("\x01")[1:]:
            sha, _, names = record.partition("\0")
            for name in names.lstrip("\n").split("\0"):
                if name:
                    found[name] = sha  # newest first: the oldest is written last
        return found

    def files_in(self, commit: str, folder: str) -> dict[str, str]:
        """name → object id of each file directly in `folder` at `commit` (none when it has no
        such folder): one `ls-tree`, where asking for each file by its path would parse the
        folder's tree once a file."""
        args = ["ls-tree", "-z", revision(commit), "--", rel_path(folder).rstrip("/") + "/"]
        status, out, _ = self._git.exec(args)
        found: dict[str, str] = {}
        listing = out.decode("utf-8", errors="surrogateescape") if status == 0 else ""
        for entry in listing.split("\0"):
            meta, _, path = entry.partition("\t")
            fields = meta.split()
            if len(fields) == 3 and fields[1] == "blob":
                found[path.rpartition("/")[2]] = fields[2]
        return found

    def folders_in(self, commit: str, folder: str) -> list[str]:
        """The names of the folders directly in `folder` at `commit`, sorted."""
        found = self._batch.read(f"{revision(commit)}:{rel_path(folder)}")
        if found is None or found.kind != "tree":
            return []
        entries = parse_tree(found.content, id_size=len(found.sha) // 2)
        names = (name for name, entry in entries.items() if entry.mode == TREE_MODE)
        return sorted(name.decode("utf-8", "surrogateescape") for name in names)

    def is_folder(self, commit: str, folder: str) -> bool:
        """True when `folder` is a folder at `commit`."""
        found = self._batch.read(f"{revision(commit)}:{rel_path(folder)}")
        return found is not None and found.kind == "tree"

    def blobs(self, names: Sequence[str]) -> list[bytes | None]:
        """The content of each object `names` names (a sha, or `commit:path`), in order, from one
        `git cat-file --batch`; None for what names no file. The caller bounds how many are
        asked at once: the answers are held together."""
        sendable = [index for index, name in enumerate(names) if "\n" not in name]
        request = b"".join(batch_name(names[index]) + b"\n" for index in sendable)
        out = self._git.run(["cat-file", "--batch"], stdin=request) if sendable else b""
        found: list[bytes | None] = [None] * len(names)
        position = 0
        for index in sendable:
            header_end = out.index(b"\n", position)
            header = batch_header(out[position:header_end])
            position = header_end + 1
            if header is None:  # `<name> missing`
                continue
            if header[1] == "blob":
                found[index] = out[position : position + header[2]]
            position += header[2] + 1  # the content, then a newline
        return found

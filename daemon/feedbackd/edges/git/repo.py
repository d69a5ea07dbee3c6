"""The workspace's git repository, open for one unit of work: read files and history back,
commit exactly the paths of one change, and reach the remote.

GitRepo is the one door the application (app/) uses; behind it each concern has its module:
  edges/git/paths.py   listings: what is untracked, changed, or where in HEAD
  edges/git/history.py a commit's history and files, read in bulk (`history_of(repo)`)
  edges/git/commit.py  commits that never touch what the user staged, and healing the index
  edges/git/remote.py  fetch, push and rebase in a temporary worktree (`repo.remote`)
  edges/git/locks.py   whether a `.git/*.lock` is stale, and clearing a stale index lock
  edges/git/runner.py  running git itself, through the one process runner (edges/process.py)

Opening the repository finds its git folder: `.git` beside the work tree, read without starting
git (the daemon opens the repository for every agent of a pass); anything else (a `.git` file
of a linked worktree or submodule, a damaged `.git`) is asked of git itself, which also says
when the folder is no repository.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from feedbackd.core.commitmsg import EVENT_KEY, LogEntry, log_entry, parse_trailers
from feedbackd.core.curation.reverts import GREP as REVERT_GREP
from feedbackd.core.curation.reverts import RevertCommit, revert_commit
from feedbackd.core.errors import GitError
from feedbackd.core.people import FEEDBACKD_PERSON, Person
from feedbackd.core.timeutil import parse_iso
from feedbackd.edges.git.batch import GitBatch, GitBatchKeeper, GitObject, batch_header, batch_name
from feedbackd.edges.git.commit import (
    CommitWriter,
    HeadMoved,
    HeldIndexLock,
    operation_in_progress,
    refuse_during_operation,
)
from feedbackd.edges.git.history import History, last_adds, log_records
from feedbackd.edges.git.locks import UsersGit, clear_index_lock
from feedbackd.edges.git.paths import Listings
from feedbackd.edges.git.remote import GitRemote
from feedbackd.edges.git.runner import (
    GitRunner,
    first_line,
    git_in,
    hint_for,
    literal_pattern,
    rel_path,
    revision,
)

log = logging.getLogger("feedbackd")

__all__ = ["GitRepo", "HeadMoved", "HeldIndexLock", "damage_in"]

_LOG_FORMAT = "%H%x00%cI%x00%an <%ae>%x00%B%x00"

_CONFIG_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9-]*(\.[^\n\0]+)?\.[A-Za-z][A-Za-z0-9-]*$")


class GitRepo:
    """A workspace repository, open for one unit of work: `with GitRepo(root) as repo: ...`."""

    def __init__(
        self,
        root: Path,
        *,
        stale_lock_s: float = 30,
        committer: Person = FEEDBACKD_PERSON,
        lock_wait_s: float = 30,
        kept: GitBatchKeeper | None = None,
    ) -> None:
        self.root = Path(root)
        self.stale_lock_s = stale_lock_s
        self.committer = committer
        self.lock_wait_s = lock_wait_s
        self._runner: GitRunner | None = None
        self._kept = kept
        self._batch: GitBatch | None = None
        self._own_batch = False
        self._writer: CommitWriter | None = None

    # --- opening ------------------------------------------------------------------------------
    def __enter__(self) -> GitRepo:
        git_dir, work_tree = _folders(self.root)
        self._runner = GitRunner(work_tree, git_dir, executable=_executable())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._own_batch and self._batch is not None:
            self._batch.close()
        self._runner = self._batch = self._writer = None

    @staticmethod
    def init(root: Path) -> None:
        """Make `root` a git repository on branch main, unless it already is one."""
        if GitRepo.is_repo(root):
            return
        Path(root).mkdir(parents=True, exist_ok=True)
        status, _, err = git_in(Path(root), ["init", "-q", "-b", "main"], executable=_executable())
        if status != 0:
            raise GitError(f"git init failed in {root}: {first_line(err)}", hint=hint_for(err))

    @staticmethod
    def is_repo(root: Path) -> bool:
        """True when `root` is the top folder of its own git work tree (not a folder inside one)."""
        folder = Path(root)
        if not folder.is_dir():
            return False
        status, top, _ = git_in(folder, ["rev-parse", "--show-toplevel"], executable=_executable())
        return status == 0 and Path(os.fsdecode(top.strip())).resolve() == folder.resolve()

    # --- reading ------------------------------------------------------------------------------
    def head(self) -> str | None:
        """The sha of HEAD, or None on a branch with no commits yet."""
        status, out, _ = self._git.exec(["rev-parse", "--verify", "-q", "HEAD"])
        return out.decode().strip() if status == 0 else None

    def user_identity(self) -> Person | None:
        """Who git would name as author here: $GIT_AUTHOR_NAME/EMAIL, else `user.name/email`."""
        values = [os.environ.get("GIT_AUTHOR_NAME"), os.environ.get("GIT_AUTHOR_EMAIL")]
        if not values[0] or not values[1]:
            values = list(self._user_config())
        if not values[0] or not values[1]:
            return None
        try:
            return Person(values[0], values[1])
        except ValueError as error:
            log.warning("ignoring the git identity of %s: %s", self.root, error)
            return None

    def _user_config(self) -> tuple[str | None, str | None]:
        """`user.name` and `user.email`: read with one git command, then again only after a
        settings file changed (a decision asks for them each time)."""
        return self._objects.remembered("user", self._read_user_config)

    def _read_user_config(self) -> tuple[str | None, str | None]:
        _, out, _ = self._git.exec(["config", "-z", "--get-regexp", r"^user\.(name|email)$"])
        found: dict[str, str] = {}
        for entry in out.decode("utf-8", errors="replace").split("\0"):
            key, _, value = entry.partition("\n")
            found[key.lower()] = value.strip()  # the last one wins, as with `--get`
        return found.get("user.name") or None, found.get("user.email") or None

    def file_at_head(self, path: str) -> bytes | None:
        """The committed content of `path` at HEAD, or None when HEAD has no such file."""
        return self._blob("HEAD", rel_path(path))

    def read_ahead_at_head(self, paths: Sequence[str]) -> None:
        """Ask git for `paths` at HEAD together: file_at_head answers them without a round
        trip each while HEAD stays where it is (see GitBatch.read_ahead)."""
        self._objects.read_ahead([f"HEAD:{rel_path(path)}" for path in paths])

    def object_at_head(self, path: str) -> GitObject | None:
        """`path` at HEAD with its object id (the content alone: file_at_head)."""
        return self._object("HEAD", rel_path(path))

    def file_at(self, commit: str, path: str) -> bytes | None:
        """The content of `path` in `commit` (a sha or revision); None when it has no such file."""
        return self._blob(revision(commit), rel_path(path))

    def commit_before(self, moment: datetime) -> str | None:
        """The newest commit of HEAD made at or before `moment`; None when there is none."""
        if self.head() is None:
            return None
        args = ["rev-list", "-1", f"--before={git_time(moment)}", "HEAD"]
        return self._git.run(args).decode().strip() or None

    def commits_touching(self, path: str, *, limit: int = 50) -> list[str]:
        """The shas of the last `limit` commits that changed `path`, newest first."""
        if self.head() is None:
            return []
        count = f"-n{max(int(limit), 0)}"
        args = ["log", "--no-renames", count, "--format=%H", "--", rel_path(path)]
        return self._git.run(args).decode().split()

    def file_at_first_add(self, path: str) -> bytes | None:
        """`path` as it was in the most recent commit that added it (a draft's snapshot)."""
        return self.files_at_last_add(path, [path]).get(rel_path(path))

    def files_at_last_add(self, under: str, paths: Collection[str]) -> dict[str, bytes]:
        """Each of `paths` (all below `under`) as it was in the most recent commit that added
        it, as file_at_first_add gives one: from one history walk and one `git cat-file
        --batch`, so the thousands of drafts of a fresh clone cost two git processes, not four
        each. Paths that no commit added are left out."""
        wanted = {rel_path(path) for path in paths}
        if not wanted or self.head() is None:
            return {}
        return self._blobs(last_adds(self._git, rel_path(under), wanted.__contains__))

    def files_at_commits(
        self, revisions: Mapping[str, str], *, together: bool = False
    ) -> dict[str, bytes]:
        """The content of each path at its commit (path → sha), through the long-lived
        cat-file (a pass asks for a few of each agent's: no git process of their own), or,
        `together`, from one `cat-file --batch` of their own (thousands of a fresh clone's
        drafts); paths a commit lacks are left out."""
        if together and revisions:
            return self._blobs(dict(revisions))
        found = {path: self._blob(sha, path) for path, sha in revisions.items()}
        return {path: data for path, data in found.items() if data is not None}

    def _blobs(self, revisions: dict[str, str]) -> dict[str, bytes]:
        """The contents of `path` at `sha` for each path → sha, from one `cat-file --batch` (a
        path with a line break, which cannot be named on its line, is asked for on its own)."""
        contents = _batch_blobs(self._git, revisions)
        for path in {path for path in revisions if "\n" in path}:
            found = self._blob(revisions[path], path)
            if found is not None:
                contents[path] = found
        return contents

    @property
    def listings(self) -> Listings:
        """What is untracked, changed, or where in HEAD (edges/git/paths.py)."""
        return Listings(self._git, self._objects)

    def log(self, *, agent: str | None = None, since: datetime | None = None) -> list[LogEntry]:
        """The learning history: commits with a Feedback-Event trailer, newest first."""
        if self.head() is None:
            return []
        if since is not None and since.tzinfo is None:
            since = since.replace(tzinfo=UTC)  # like every other time in feedbackd
        args = ["log", "-i", f"--grep=^{EVENT_KEY}:", f"--format={_LOG_FORMAT}", "HEAD"]
        return [
            entry
            for entry, _ in _log_entries(self._git.run(args))
            if (agent is None or entry.agent == agent)
            and (since is None or parse_iso(entry.date) >= since)
        ]

    def trailer_log(self, trailers: Mapping[str, str]) -> list[LogEntry]:
        """Learning-history commits carrying each of these trailer values exactly, newest first.

        git does the filtering (e.g. the pricing commits of one skill), so asking stays cheap in
        a long history; the values are matched as literal text.
        """
        if self.head() is None or not trailers:
            return []
        greps = [f"--grep=^{key}: {literal_pattern(value)}$" for key, value in trailers.items()]
        args = ["log", "-E", "--all-match", *greps, f"--format={_LOG_FORMAT}", "HEAD"]
        found = []
        for entry, message in _log_entries(self._git.run(args)):
            values = {key.lower(): vals[-1] for key, vals in parse_trailers(message).items()}
            if all(values.get(key.lower()) == value for key, value in trailers.items()):
                found.append(entry)
        return found

    def set_config(self, key: str, value: str) -> None:
        """Set a key in the repository's own `.git/config` (e.g. the merge driver)."""
        if not _CONFIG_KEY.fullmatch(key) or "\n" in value or "\0" in value:
            raise GitError(
                f"refusing git config {key!r} = {value!r}",
                hint="use a key like section.name and a one-line value",
            )
        self._git.run(["config", "--local", key, value])

    # --- committing ---------------------------------------------------------------------------
    def commit_paths(
        self,
        paths: Sequence[str],
        message: str,
        author: Person,
        within: str | None = None,
        needed: Sequence[str] = (),
    ) -> str | None:
        """Commit exactly `paths` (added, modified or deleted) as one commit: its sha, or None
        when none of them differ from HEAD. The user's other changes stay as they were; the
        user's index entries for `paths` follow the commit. `within`: a folder that must still
        stand once the change is read (FileNotFoundError); `needed`: files of `paths` that must
        still be there then (HeadMoved)."""
        return self._commits.commit(paths, message, author, within, needed)

    def commit_folder_move(self, old: str, new: str, message: str, author: Person) -> str | None:
        """One pure rename of the folder `old` to `new` (see CommitWriter.move_folder)."""
        return self._commits.move_folder(old, new, message, author)

    def holding(
        self, expected: str | None, *, index_once: bool = False
    ) -> AbstractContextManager[HeldIndexLock]:
        """Hold the index lock for one change planned on HEAD `expected`: write its files and
        commit them inside (see CommitWriter). HeadMoved when HEAD is another commit by then;
        `held.head` is the change's commit afterwards. `index_once`: for several changes in a
        row, the user's index follows them all at once, as the lock is let go."""
        return self._commits.holding(expected, index_once=index_once)

    @property
    def users_git(self) -> UsersGit:
        """The git commands of someone else's (a `git stash`, `reset`, `pull`) that change it."""
        return self._commits.users_git

    def holding_on_top(self) -> AbstractContextManager[HeldIndexLock]:
        """Hold the index lock for a change that goes on top of whatever HEAD is (a rating is
        appended, not planned on a HEAD): no reset or stash of the user's can fall between its
        writes and its commit."""
        return self._commits.holding()

    def settled_head(self) -> str | None:
        """HEAD, once no git command of the user's changes the workspace (a `git stash` or
        `pull` half-way): what a pass that reads the workspace plans on."""
        return self._commits.settled_head()

    def put_back(self, path: str, within: Path) -> bool:
        """Write `path` as HEAD holds it where the work tree has nothing; True when written."""
        return self._commits.put_back(rel_path(path), within)

    def file_id_at_head(self, path: str) -> str | None:
        """The object id of `path` at HEAD (None: nothing there), its content left unread."""
        return self._commits.entry_id_at_head(path)

    def file_ids_at_head(self, paths: Sequence[str]) -> dict[str, str | None]:
        """file_id_at_head of each path, HEAD read once."""
        return self._commits.entry_ids_at_head(paths)

    def heal_index(self, depth: int = 20, *, dry_run: bool = False) -> list[str]:
        """Bring index entries that a crash left behind recent commits back in line (see
        CommitWriter.heal_index); the paths fixed (`dry_run`: found, and left as they are)."""
        return self._commits.heal_index(depth, dry_run)

    def operation_in_progress(self) -> str | None:
        """`rebase`, `merge`, `cherry-pick` or `revert` while the user is in the middle of one."""
        return operation_in_progress(self._git_dir)

    def refuse_during_operation(self) -> None:
        """GitError while the user is in a rebase, merge, ...: feedbackd commits nothing then."""
        refuse_during_operation(self._git_dir)

    # --- history and branches -------------------------------------------------------------------
    def current_branch(self) -> str | None:
        """The branch HEAD points at (even before its first commit); None when HEAD is detached."""
        status, out, _ = self._git.exec(["symbolic-ref", "-q", "--short", "HEAD"])
        name = out.decode().strip()
        return name if status == 0 and name else None

    def rev(self, ref: str) -> str | None:
        """The commit that `ref` names, or None when there is none."""
        return self._git.rev(ref)

    def is_ancestor(self, older: str, newer: str) -> bool:
        """True when `newer` already contains `older`."""
        args = ["merge-base", "--is-ancestor", revision(older), revision(newer)]
        status, _, err = self._git.exec(args)
        if status > 1:
            raise GitError(f"git merge-base failed: {first_line(err)}", hint=hint_for(err))
        return status == 0

    def count_commits(self, since: str | None, until: str) -> int:
        """How many commits `until` has that `since` lacks (all of them when since is None)."""
        spec = [revision(until), *([f"^{revision(since)}"] if since else [])]
        return int(self._git.run(["rev-list", "--count", *spec]).decode().strip() or 0)

    # --- the parts behind the door ---------------------------------------------------------------
    @property
    def remote(self) -> GitRemote:
        """Fetch, push and rebase for this repository (edges/git/remote.py)."""
        return GitRemote(self._git, self.committer, self._clear_index_lock)

    @property
    def _commits(self) -> CommitWriter:
        # One writer while the repository is open: the trees it read stay parsed between commits.
        if self._writer is None:
            self._writer = CommitWriter(
                self._git, self._objects, self.committer, self._clear_index_lock, self.lock_wait_s
            )
        return self._writer

    @property
    def _objects(self) -> GitBatch:
        """The long-lived git helpers: kept by the caller's GitBatchKeeper, else this unit's own."""
        if self._batch is None:
            where = (self._git.work_tree, self._git.git_dir, self._git.executable)
            if self._kept is not None:
                self._batch = self._kept.batch_for(*where)
            else:
                self._batch, self._own_batch = GitBatch(*where), True
        return self._batch

    @property
    def _git(self) -> GitRunner:
        if self._runner is None:
            raise RuntimeError("GitRepo is used outside its `with` block")
        return self._runner

    @property
    def _git_dir(self) -> Path:
        return self._git.git_dir

    def _clear_index_lock(self) -> None:
        clear_index_lock(
            self.root, self._git_dir, stale_after_s=self.stale_lock_s, wait_s=self.lock_wait_s
        )

    def _blob(self, rev: str, rel: str) -> bytes | None:
        """The file `rel` at `rev`; None for none (a folder)."""
        found = self._object(rev, rel)
        return found.content if found is not None else None

    def _object(self, rev: str, rel: str) -> GitObject | None:
        """The file `rel` at `rev` and its id, through the long-lived cat-file; None for none."""
        if "\n" in rel:  # cannot be named to cat-file --batch
            sha = self._git.blob_id(rev, rel)
            return GitObject(sha, "blob", self._git.run(["cat-file", "blob", sha])) if sha else None
        found = self._objects.read(f"{rev}:{rel}")
        return found if found is not None and found.kind == "blob" else None


def git_time(moment: datetime) -> str:
    """`moment` as git reads it in `--before`: seconds since 1970 with the zone, without which
    git takes a small number of seconds (`@86399`, the end of 1970-01-01) for no time at all."""
    return f"@{int(moment.timestamp())} +0000"


def history_of(repo: GitRepo) -> History:
    """A commit's history and files read in bulk (edges/git/history.py), through the open
    repository's git and long-lived helpers."""
    return History(repo._git, repo._objects)


def log_and_reverts(repo: GitRepo) -> list[LogEntry | RevertCommit]:
    """The learning history (as `GitRepo.log`) and the `git revert` commits among it, newest
    first, from one walk that git filters to those two kinds."""
    if repo.head() is None:
        return []
    greps = [f"--grep=^{EVENT_KEY}:", f"--grep={REVERT_GREP}"]
    args = ["log", "-E", "-i", *greps, f"--format={_LOG_FORMAT}", "HEAD"]
    found: list[LogEntry | RevertCommit] = []
    for fields in log_records(repo._git.run(args)):
        step = log_entry(*fields) or revert_commit(*fields)
        if step is not None:
            found.append(step)
    return found


def _batch_blobs(git: GitRunner, revisions: dict[str, str]) -> dict[str, bytes]:
    """What one `cat-file --batch` answers for each path → sha whose path has no line break."""
    order = sorted(path for path in revisions if "\n" not in path)
    request = b"".join(batch_name(f"{revisions[path]}:{path}") + b"\n" for path in order)
    out = git.run(["cat-file", "--batch"], stdin=request) if order else b""
    contents: dict[str, bytes] = {}
    position = 0
    for path in order:
        header_end = out.index(b"\n", position)
        header = batch_header(out[position:header_end])
        position = header_end + 1
        if header is None:  # `<sha>:<path> missing`
            continue
        contents[path] = out[position : position + header[2]]
        position += header[2] + 1  # the content, then a newline
    return contents


def _log_entries(out: bytes) -> Iterator[tuple[LogEntry, str]]:
    """The learning-history commits of `git log --format=_LOG_FORMAT`, each with its message."""
    for commit, date, author, message in log_records(out):
        entry = log_entry(commit, date, author, message)
        if entry is not None:
            yield entry, message


def _executable() -> str:
    """The git program: $GIT_PYTHON_GIT_EXECUTABLE (as GitPython named it), else `git`."""
    return os.environ.get("GIT_PYTHON_GIT_EXECUTABLE") or "git"


def _folders(root: Path) -> tuple[Path, Path]:
    """(git folder, work tree) of the repository whose work tree is `root`."""
    dot_git = root / ".git"
    if (dot_git / "HEAD").is_file() and (dot_git / "objects").is_dir():
        return dot_git, root
    status, out = 1, b""  # no folder, no repository
    if root.is_dir():
        asked = ["rev-parse", "--absolute-git-dir", "--show-toplevel"]
        status, out, _ = git_in(root, asked, executable=_executable())
    lines = os.fsdecode(out).splitlines()
    if status != 0 or len(lines) != 2 or Path(lines[1]).resolve() != root.resolve():
        raise GitError(
            f"{root} is not a git repository",
            hint="run `feedbackd init` there, or set git.enabled: false",
        )
    return Path(lines[0]), root


def damage_in(root: Path) -> str | None:
    """What `git fsck` finds missing or broken among the objects that the refs, the index and
    the reflogs of the repository at `root` reach (their connections, not each object's bytes:
    seconds on a big site, not minutes); None when the repository is whole."""
    git_dir, work_tree = _folders(root)
    git = GitRunner(work_tree, git_dir, executable=_executable())
    args = ["fsck", "--connectivity-only", "--no-dangling", "--no-progress"]
    status, out, err = git.exec(args, timeout=600)
    if status == 0:
        return None
    found = [line for line in (out.decode("utf-8", "replace") + err).splitlines() if line]
    return "; ".join(found[:3]) or f"git fsck exited {status}"

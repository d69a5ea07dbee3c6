"""The workspace's git repository: commit exactly the paths of one change, read history back.

GitPython is used here only to open the repository (`with Repo(...)`, closed at once, so no
`git cat-file` children or file handles outlive it in the long-running daemon) and to name the
git program; every git command runs through edges/gitrunner.py and the one process runner.

Commits never touch what a user has staged: the change is built in a temporary index seeded from
HEAD, committed with `commit-tree`, HEAD is moved with a compare-and-swap `update-ref`, and only
then are the user's index entries for exactly those paths brought in line with the new commit.

Remote sync works the same way round, in edges/gitremote.py (`repo.remote`); stale locks are
judged in edges/gitlocks.py.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from git import Git, Repo
from git.exc import InvalidGitRepositoryError, NoSuchPathError

from feedbackd.core.commitmsg import (
    EVENT_KEY,
    LogEntry,
    Person,
    log_entry,
    parse_trailers,
)
from feedbackd.core.errors import GitError
from feedbackd.core.timeutil import parse_iso
from feedbackd.edges.gitlocks import clear_index_lock
from feedbackd.edges.gitremote import GitRemote
from feedbackd.edges.gitrunner import (
    GitRunner,
    IndexLockBusy,
    first_line,
    git_in,
    hint_for,
    identity_env,
    literal_pattern,
    rel_path,
    revision,
)

log = logging.getLogger("feedbackd")

DEFAULT_COMMITTER = Person("feedbackd", "feedbackd@localhost")
_COMMIT_ATTEMPTS = 3
# The temporary index of the last commit, named after that commit; it seeds the next one.
_KEPT_INDEX = "feedbackd-index."
_LOG_FORMAT = "%H%x00%cI%x00%an <%ae>%x00%B%x00"

_CONFIG_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9-]*(\.[^\n\0]+)?\.[A-Za-z][A-Za-z0-9-]*$")

_OPERATIONS = {
    "rebase-merge": "rebase",
    "rebase-apply": "rebase",
    "MERGE_HEAD": "merge",
    "CHERRY_PICK_HEAD": "cherry-pick",
    "REVERT_HEAD": "revert",
}


class GitRepo:
    """A workspace repository, open for one unit of work: `with GitRepo(root) as repo: ...`."""

    def __init__(
        self,
        root: Path,
        *,
        stale_lock_s: float = 30,
        committer: Person = DEFAULT_COMMITTER,
        lock_wait_s: float = 30,
    ) -> None:
        self.root = Path(root)
        self.stale_lock_s = stale_lock_s
        self.committer = committer
        self.lock_wait_s = lock_wait_s
        self._runner: GitRunner | None = None

    # --- opening ------------------------------------------------------------------------------
    def __enter__(self) -> GitRepo:
        try:
            with Repo(self.root) as repo:  # only to find its folders: it starts no git process
                git_dir, work_tree = Path(repo.git_dir), Path(repo.working_tree_dir or self.root)
        except (InvalidGitRepositoryError, NoSuchPathError) as error:
            raise GitError(
                f"{self.root} is not a git repository",
                hint="run `feedbackd init` there, or set git.enabled: false",
            ) from error
        self._runner = GitRunner(work_tree, git_dir, executable=_executable())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._runner = None

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
        """`user.name` and `user.email`, read with one git command."""
        _, out, _ = self._git.exec(["config", "-z", "--get-regexp", r"^user\.(name|email)$"])
        found: dict[str, str] = {}
        for entry in out.decode("utf-8", errors="replace").split("\0"):
            key, _, value = entry.partition("\n")
            found[key.lower()] = value.strip()  # the last one wins, as with `--get`
        return found.get("user.name") or None, found.get("user.email") or None

    def file_at_head(self, path: str) -> bytes | None:
        """The committed content of `path` at HEAD, or None when HEAD has no such file."""
        return self._blob("HEAD", rel_path(path))

    def file_at(self, commit: str, path: str) -> bytes | None:
        """The content of `path` in `commit` (a sha or revision); None when it has no such file."""
        return self._blob(revision(commit), rel_path(path))

    def commits_touching(self, path: str, *, limit: int = 50) -> list[str]:
        """The shas of the last `limit` commits that changed `path`, newest first."""
        if self.head() is None:
            return []
        count = f"-n{max(int(limit), 0)}"
        args = ["log", "--no-renames", count, "--format=%H", "--", rel_path(path)]
        return self._git.run(args).decode().split()

    def file_at_first_add(self, path: str) -> bytes | None:
        """`path` as it was in the most recent commit that added it (a draft's snapshot)."""
        rel = rel_path(path)
        if self.head() is None:
            return None
        args = ["log", "--no-renames", "--diff-filter=A", "-1", "--format=%H", "--", rel]
        sha = self._git.run(args).decode().strip()
        return self._blob(sha, rel) if sha else None

    def changed_paths(self, under: str) -> list[str]:
        """Paths below `under` that differ from HEAD: modified, deleted, added or untracked."""
        spec = rel_path(under) if under not in ("", ".") else "."
        args = ["status", "--porcelain", "-z", "--no-renames", "--untracked-files=all", "--", spec]
        entries = self._git.run(args).decode("utf-8", errors="surrogateescape").split("\0")
        return sorted({entry[3:] for entry in entries if len(entry) > 3})

    def untracked_paths(self, under: str) -> list[str]:
        """Files below `under` that git does not track (and does not ignore)."""
        spec = rel_path(under) if under not in ("", ".") else "."
        args = ["ls-files", "-z", "--others", "--exclude-standard", "--", spec]
        entries = self._git.run(args).decode("utf-8", errors="surrogateescape").split("\0")
        return sorted(entry for entry in entries if entry)

    def log(self, *, agent: str | None = None, since: datetime | None = None) -> list[LogEntry]:
        """The learning history: commits with a Feedback-Event trailer, newest first."""
        if self.head() is None:
            return []
        if since is not None and since.tzinfo is None:
            since = since.replace(tzinfo=UTC)  # like every other time in feedbackd
        args = ["log", "-i", f"--grep=^{EVENT_KEY}:", f"--format={_LOG_FORMAT}", "HEAD"]
        parts = self._git.run(args).decode("utf-8", errors="replace").split("\0")
        entries: list[LogEntry] = []
        for index in range(0, len(parts) - 3, 4):
            commit, date, author, message = parts[index : index + 4]
            entry = log_entry(commit.strip(), date, author, message)
            if entry is None or (agent is not None and entry.agent != agent):
                continue
            if since is not None and parse_iso(entry.date) < since:
                continue
            entries.append(entry)
        return entries

    def trailer_log(self, trailers: Mapping[str, str]) -> list[LogEntry]:
        """Learning-history commits carrying each of these trailer values exactly, newest first.

        git does the filtering (e.g. the pricing commits of one skill), so asking stays cheap in
        a long history; the values are matched as literal text.
        """
        if self.head() is None or not trailers:
            return []
        greps = [f"--grep=^{key}: {literal_pattern(value)}$" for key, value in trailers.items()]
        args = ["log", "-E", "--all-match", *greps, f"--format={_LOG_FORMAT}", "HEAD"]
        parts = self._git.run(args).decode("utf-8", errors="replace").split("\0")
        found = []
        for index in range(0, len(parts) - 3, 4):
            commit, date, author, message = parts[index : index + 4]
            entry = log_entry(commit.strip(), date, author, message)
            values = {key.lower(): vals[-1] for key, vals in parse_trailers(message).items()}
            if entry is not None and all(
                values.get(key.lower()) == value for key, value in trailers.items()
            ):
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
    def commit_paths(self, paths: Sequence[str], message: str, author: Person) -> str | None:
        """Commit exactly `paths` (added, modified or deleted) as one commit; return its sha.

        Returns None when none of them differ from HEAD. The user's other staged and unstaged
        changes stay as they were; the user's index entries for `paths` follow the new commit.
        """
        rels = list(dict.fromkeys(rel_path(path) for path in paths))
        if not rels:
            return None
        self.refuse_during_operation()
        self._clear_index_lock()
        for attempt in range(1, _COMMIT_ATTEMPTS + 1):
            head, head_tree = self._head_and_tree()
            with self._temporary_index() as env:
                new = self._write_commit(head, head_tree, rels, message, author, env)
                if new is None:
                    self._keep_index(env, head)  # it still holds exactly HEAD's tree
                    return None
                if self._move_head(new, head, message, attempt):
                    self._keep_index(env, new)
                    self._sync_user_index(new, rels)
                    return new
        raise AssertionError("unreachable: _move_head raises on the last attempt")

    def _head_and_tree(self) -> tuple[str | None, str]:
        """HEAD and its tree in one git command; None and the empty tree before a first commit."""
        status, out, _ = self._git.exec(["rev-parse", "HEAD", "HEAD^{tree}", "--"])
        lines = out.decode().split()
        if status != 0 or len(lines) < 2:
            return None, self._git.tree_of(None)
        return lines[0], lines[1]

    def _write_commit(
        self,
        head: str | None,
        head_tree: str,
        rels: list[str],
        message: str,
        author: Person,
        env: Mapping[str, str],
    ) -> str | None:
        """The new commit (not yet on any branch), built in the temporary index `env` names."""
        self._seed_index(head, env)
        present = self._present(rels, env)
        if not present:
            return None
        self._git.run(["add", "-A", "--", *present], env=env)
        tree = self._git.run(["write-tree"], env=env).decode().strip()
        if tree == head_tree:
            return None
        parents = ["-p", head] if head else []
        people = {**identity_env("AUTHOR", author), **identity_env("COMMITTER", self.committer)}
        args = ["commit-tree", "--no-gpg-sign", tree, *parents]
        return self._git.run(args, env=people, stdin=message.encode()).decode().strip()

    def _seed_index(self, head: str | None, env: Mapping[str, str]) -> None:
        """Start the temporary index as HEAD's tree: the index our last commit was written from
        when HEAD is still that commit (taken with a rename, so two writers never share it),
        else HEAD read afresh. It keeps git's stat data, so unchanged files are not re-read.
        """
        if head is None:
            return
        try:
            os.replace(self._git_dir / f"{_KEPT_INDEX}{head}", env["GIT_INDEX_FILE"])
        except FileNotFoundError:
            self._git.run(["read-tree", head], env=env)

    def _keep_index(self, env: Mapping[str, str], commit: str | None) -> None:
        """Keep the temporary index, which holds exactly `commit`'s tree, for the next commit."""
        if commit is None:
            return
        kept = self._git_dir / f"{_KEPT_INDEX}{commit}"
        try:
            os.replace(env["GIT_INDEX_FILE"], kept)
        except FileNotFoundError:
            return
        for older in self._git_dir.glob(f"{_KEPT_INDEX}*"):
            if older != kept:
                older.unlink(missing_ok=True)

    def _present(self, rels: list[str], env: Mapping[str, str]) -> list[str]:
        """The paths that exist on disk or are tracked; git refuses any others."""
        missing = [rel for rel in rels if not os.path.lexists(self.root / rel)]
        if not missing:
            return rels
        listed = self._git.run(["ls-files", "-z", "--", *missing], env=env)
        names = listed.decode("utf-8", errors="surrogateescape").split("\0")
        tracked = {rel for rel in missing if any(_within(name, rel) for name in names if name)}
        return [rel for rel in rels if rel not in missing or rel in tracked]

    def _move_head(self, new: str, old: str | None, message: str, attempt: int) -> bool:
        """Point HEAD at `new` if it still is `old`; False (retry) when someone moved it."""
        expected = old or "0" * len(new)  # all zeros: HEAD's branch must not exist yet
        subject = message.strip().split("\n", 1)[0]
        args = ["update-ref", "-m", f"feedbackd: {subject}", "HEAD", new, expected]
        status, _, err = self._git.exec(args)
        if status == 0:
            return True
        if attempt == _COMMIT_ATTEMPTS:
            raise GitError(
                f"could not move HEAD to the new commit: {first_line(err)}",
                hint=(
                    hint_for(err)
                    if ".lock" in err
                    else "another program keeps committing here; try again, or stop it for a moment"
                ),
            )
        log.info("HEAD moved while committing (%s); trying again", first_line(err))
        return False

    def _sync_user_index(self, new: str, rels: list[str]) -> None:
        """Make the user's index entries for `rels` match the new commit, and nothing else."""
        # reset refreshes the stat data afterwards: without it these entries look modified to
        # commands that need a clean index (the read-tree -m -u of a sync after a pull).
        args = ["reset", "-q", new, "--", *rels]
        try:
            try:
                self._git.run(args)
            except IndexLockBusy:
                self._clear_index_lock()
                self._git.run(args)
        except GitError as error:
            # The commit exists; only the index view of these paths lags behind it.
            log.warning(
                "committed %s, but could not update the git index for %s (%s); run: git reset -q"
                " HEAD -- %s",
                new[:12],
                ", ".join(rels),
                error,
                " ".join(rels),
            )

    def heal_index(self, depth: int = 20) -> list[str]:
        """Bring index entries that lag behind recent commits back in line; the paths fixed.

        A crash between moving HEAD and `_sync_user_index` leaves the index showing that commit's
        changes undone (a later `git commit` by the user would revert them). Only paths of the
        last `depth` commits whose work-tree file matches HEAD are touched: a user's own staged
        change differs from HEAD in the work tree too, and stays as it is.
        """
        head = self.head()
        if head is None:
            return []
        recent = ["log", f"-n{int(depth)}", "--format=", "--name-only", "-z", "--no-renames", head]
        names = self._git.run(recent).decode("utf-8", "surrogateescape").split("\0")
        touched = sorted({name.strip("\n") for name in names} - {""})
        if not touched:
            return []
        args = ["diff", "--cached", "--name-only", "-z", "--no-renames", head, "--", *touched]
        lagging = self._git.run(args).decode("utf-8", "surrogateescape").split("\0")
        stale = [
            rel for rel in lagging if rel and self._git.blob_id(head, rel) == self._disk_id(rel)
        ]
        if stale:
            # The same crash may have left index.lock, still young at a quick restart: wait
            # until it is judged stale (or its live owner is done) instead of failing the heal.
            self._clear_index_lock()
            self._git.run(["reset", "-q", head, "--", *stale])
            log.warning(
                "the git index lagged behind recent commits for %s; fixed", ", ".join(stale)
            )
        return stale

    def _disk_id(self, rel: str) -> str | None:
        if not (self.root / rel).is_file():
            return None
        return self._git.run(["hash-object", "--", str(self.root / rel)]).decode().strip()

    # --- remote sync ----------------------------------------------------------------------------
    def current_branch(self) -> str | None:
        """The branch HEAD points at (even before its first commit); None when HEAD is detached."""
        status, out, _ = self._git.exec(["symbolic-ref", "-q", "--short", "HEAD"])
        name = out.decode().strip()
        return name if status == 0 and name else None

    def rev(self, ref: str) -> str | None:
        """The commit that `ref` names, or None when there is none."""
        return self._git.rev(ref)

    def operation_in_progress(self) -> str | None:
        """`rebase`, `merge`, `cherry-pick` or `revert` while the user is in the middle of one."""
        for marker, name in _OPERATIONS.items():
            if (self._git_dir / marker).exists():
                return name
        return None

    def refuse_during_operation(self) -> None:
        """Raise GitError while the user is in the middle of a rebase, merge, ...

        A commit made then lands on the HEAD of that operation: `git rebase --abort` throws it
        away, and with it the files it held (a draft vanished from queue/). So feedbackd writes
        and commits nothing until the operation is finished; what waits is done afterwards.
        """
        operation = self.operation_in_progress()
        if operation is not None:
            raise GitError(
                f"a git {operation} is in progress in the workspace; feedbackd records nothing"
                " until it is finished",
                hint=f"finish it with `git {operation} --continue`, or undo it with"
                f" `git {operation} --abort`; what waited is recorded then",
            )

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

    def paths_changed(self, old: str | None, new: str) -> list[str]:
        """Paths that differ between two commits (every path of `new` when old is None)."""
        args = ["diff-tree", "-r", "-z", "--name-only", "--no-renames", "--no-commit-id"]
        out = self._git.run([*args, old or self._git.tree_of(None), revision(new)])
        return sorted(name for name in out.decode("utf-8", "surrogateescape").split("\0") if name)

    @property
    def remote(self) -> GitRemote:
        """Fetch, push and rebase for this repository (edges/gitremote.py)."""
        return GitRemote(self._git, self.committer, self._clear_index_lock)

    # --- the index lock -----------------------------------------------------------------------
    @property
    def _git_dir(self) -> Path:
        return self._git.git_dir

    def _clear_index_lock(self) -> None:
        clear_index_lock(
            self.root, self._git_dir, stale_after_s=self.stale_lock_s, wait_s=self.lock_wait_s
        )

    # --- running git --------------------------------------------------------------------------
    @property
    def _git(self) -> GitRunner:
        if self._runner is None:
            raise RuntimeError("GitRepo is used outside its `with` block")
        return self._runner

    @contextmanager
    def _temporary_index(self) -> Iterator[dict[str, str]]:
        index = self._git_dir / f"feedbackd-index-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            yield {"GIT_INDEX_FILE": str(index)}
        finally:
            for leftover in (index, index.with_name(index.name + ".lock")):
                leftover.unlink(missing_ok=True)

    def _blob(self, rev: str, rel: str) -> bytes | None:
        sha = self._git.blob_id(rev, rel)
        return self._git.run(["cat-file", "blob", sha]) if sha else None


def _within(name: str, rel: str) -> bool:
    return name == rel or name.startswith(rel.rstrip("/") + "/")


def _executable() -> str:
    """The git program: GitPython's choice ($GIT_PYTHON_GIT_EXECUTABLE), else `git`."""
    return Git.GIT_PYTHON_GIT_EXECUTABLE or "git"

"""Running the git CLI for feedbackd: every git command goes through `GitRunner` (or `git_in` for a
folder that is not open yet), and from there through the one process runner, edges/process.py.

The runner pins the repository's folders and index in each command's environment, asks git for
English messages and no prompts, and turns git's complaints into GitError with a hint. The
argument guards here keep a path, revision, branch or remote from ever being read as an option.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath

from feedbackd.core.commitmsg import one_line
from feedbackd.core.errors import GitError, RepositoryDamaged, WorkspaceError
from feedbackd.core.people import Person
from feedbackd.edges.files import NO_SPACE_WORDS
from feedbackd.edges.process import StartedProcess, run_process

# Literal pathspecs: an item called `a*.json` must never match other files. No optional locks:
# reading status must not fight a user's git for `.git/index.lock`. Never prompt. English
# messages, since some are recognised by their text.
BASE_ENV = {
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "LANGUAGE": "C",
    "LC_ALL": "C",
}
_LOCK_BUSY_MARKERS = ("index.lock': File exists", "index.lock: File exists")
# How git says that an object it needs is missing or unreadable (a damaged repository), as
# opposed to a name that names nothing: each names the object, or HEAD.
_DAMAGE = re.compile(
    r"Could not read [0-9a-f]{7,}|unable to read (?:tree |sha1 file of .*?)?[0-9a-f]{7,}"
    r"|bad object (?:HEAD|[0-9a-f]{7,})|object corrupt or missing|is corrupt"
    r"|missing (?:blob|tree|commit) (?:object )?[0-9a-f]{7,}|inflate: data stream error"
    r"|packfile .* cannot be accessed|unable to parse commit [0-9a-f]{7,}"
)


class IndexLockBusy(GitError):
    """git refused to run because `.git/index.lock` appeared while we worked."""


def git_in(
    folder: Path,
    args: Sequence[str],
    *,
    executable: str = "git",
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    timeout: float | None = None,
) -> tuple[int, bytes, str]:
    """Run git in `folder`: its exit status, stdout, and stderr as text.

    A git stopped at its deadline comes back as status -1 with the reason as its stderr; a git
    that cannot start at all raises GitError, since no answer of git's can be read from that.
    """
    done = run_process(
        [executable, *args],
        cwd=folder,
        env={**BASE_ENV, **(env or {})},
        stdin=stdin,
        timeout=timeout,
    )
    if done.status is not None:
        return done.status, done.stdout, done.stderr.decode("utf-8", errors="replace")
    if done.timed_out:
        return -1, b"", done.reason
    raise GitError(done.reason, hint="install git, or put it on the PATH of feedbackd")


def _output(args: Sequence[str], status: int, out: bytes, err: str) -> bytes:
    """git's stdout, or GitError naming the command and git's complaint."""
    if status == 0:
        return out
    if any(marker in err for marker in _LOCK_BUSY_MARKERS):
        raise IndexLockBusy(first_line(err), hint=hint_for(err))
    command = next((arg for arg in args if not arg.startswith("-") and "=" not in arg), "")
    damage = _DAMAGE.search(err)
    if damage is not None:
        raise RepositoryDamaged(f"git {command} failed: {_line_with(err, damage.start())}")
    raise GitError(
        f"git {command} failed: {first_line(err) or f'exit status {status}'}",
        hint=hint_for(err),
    )


class StartedGit:
    """A git command running while feedbackd goes on (GitRunner.start)."""

    def __init__(self, args: Sequence[str], started: StartedProcess) -> None:
        self._args = args
        self._started = started

    def output(self) -> bytes:
        """Wait for it; its stdout, or GitError as GitRunner.run raises it."""
        done = self._started.finish()
        if done.status is None:
            raise GitError(done.reason, hint="install git, or put it on the PATH of feedbackd")
        err = done.stderr.decode("utf-8", errors="replace")
        return _output(self._args, done.status, done.stdout, err)


class GitRunner:
    """git commands in one repository, which its folders and index are pinned to."""

    def __init__(self, work_tree: Path, git_dir: Path, *, executable: str = "git") -> None:
        self.work_tree = work_tree
        self.git_dir = git_dir
        self.executable = executable
        # A GIT_DIR or GIT_INDEX_FILE inherited from a hook or a shell must never point feedbackd
        # at another repository or index.
        self._pinned = {
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(work_tree),
            "GIT_INDEX_FILE": str(git_dir / "index"),
        }

    def exec(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        cwd: Path | None = None,
        timeout: float | None = None,
    ) -> tuple[int, bytes, str]:
        """Run git in the workspace (or in `cwd`, a temporary worktree); kill it after timeout."""
        return git_in(
            cwd or self.work_tree,
            args,
            executable=self.executable,
            env={**self._pinned, **(env or {})},
            stdin=stdin,
            timeout=timeout,
        )

    def run(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        cwd: Path | None = None,
    ) -> bytes:
        """Run git; its stdout as bytes, or GitError naming the command and git's complaint."""
        return _output(args, *self.exec(args, env=env, stdin=stdin, cwd=cwd))

    def start(self, args: Sequence[str], *, env: Mapping[str, str] | None = None) -> StartedGit:
        """Start a short git command in the workspace, to be waited for later (StartedGit)."""
        started = StartedProcess(
            [self.executable, *args],
            cwd=self.work_tree,
            env={**BASE_ENV, **self._pinned, **(env or {})},
        )
        return StartedGit(args, started)

    # --- small questions every git module asks -------------------------------------------------
    def config(self, key: str) -> str | None:
        status, out, _ = self.exec(["config", "--get", key])
        value = out.decode("utf-8", errors="replace").strip()
        return value if status == 0 and value else None

    def rev(self, ref: str) -> str | None:
        """The commit that `ref` names, or None when there is none."""
        status, out, _ = self.exec(["rev-parse", "--verify", "-q", f"{revision(ref)}^{{commit}}"])
        return out.decode().strip() if status == 0 else None

    def tree_of(self, head: str | None) -> str:
        """The tree of commit `head`; the empty tree for None."""
        if head is None:
            return self.run(["hash-object", "-t", "tree", "--stdin"], stdin=b"").decode().strip()
        return self.run(["rev-parse", f"{head}^{{tree}}"]).decode().strip()

    def blob_id(self, rev: str, rel: str) -> str | None:
        """The object id of the file `rel` at `rev`; None for a folder or a missing path."""
        status, out, _ = self.exec(["ls-tree", "-z", rev, "--", rel])
        # One entry `mode type sha<TAB>path`.
        meta, _, name = out.decode("utf-8", errors="surrogateescape").partition("\t")
        fields = meta.split()
        if status != 0 or name.rstrip("\0") != rel or len(fields) != 3 or fields[1] != "blob":
            return None
        return fields[2]


# --- arguments git can never mistake for something else ---------------------------------------
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/~^@{}-]{0,255}$")
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)(?!.*//)[A-Za-z0-9._/-]{1,200}(?<!\.lock)(?<![./])$")
_REMOTE = re.compile(r"^(?!-)[^\s\0]{1,1000}$")


def rel_path(path: str) -> str:
    """A clean workspace-relative path in git's spelling; anything that could escape is refused."""
    text = os.fspath(path)
    if _already_clean(text):
        return text  # a pass names thousands of files: no pathlib for those needing nothing
    pure = PurePosixPath(text.replace(os.sep, "/"))
    if (
        not text
        or "\0" in text
        or pure.is_absolute()
        or ".." in pure.parts
        or pure.parts[:1] in ((), (".git",))
    ):
        raise WorkspaceError(
            f"{text!r} is not a path inside the workspace",
            hint="give a path relative to the workspace folder, without '..'",
        )
    return pure.as_posix()


def _already_clean(text: str) -> bool:
    """True when `text` is a relative path as git spells it: no empty, `.` or `..` part, not in
    .git, no NUL. Whatever else goes the long way, which refuses or cleans it."""
    parts = text.split("/")
    return (
        os.sep == "/"
        and all(parts)
        and "\0" not in text
        and parts[0] != ".git"
        and "." not in parts
        and ".." not in parts
    )


def revision(commit: str) -> str:
    """A revision as given, unless it could be taken for an option or is not one at all."""
    if not isinstance(commit, str) or not _REVISION.fullmatch(commit):
        raise GitError(f"{commit!r} is not a commit", hint="give a commit sha, e.g. from git log")
    return commit


def branch_name(name: str) -> str:
    """A branch name git accepts, that no option or odd ref can hide in."""
    if not isinstance(name, str) or not _BRANCH.fullmatch(name) or name.startswith("/"):
        raise GitError(f"{name!r} is not a usable branch name", hint="set git.branch, e.g. main")
    return name


def remote_name(name: str) -> str:
    """A remote name, path or URL; never something git would read as an option."""
    if not isinstance(name, str) or not _REMOTE.fullmatch(name):
        raise GitError(
            f"{name!r} is not a usable remote",
            hint="set git.remote to a remote name (e.g. origin), a URL or a path",
        )
    return name


def literal_pattern(value: str) -> str:
    """`value` as an extended regular expression that matches exactly that text."""
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", one_line(value, 1000))


def config_args(settings: Mapping[str, str]) -> list[str]:
    """`-c key=value` options: settings for one command only."""
    return [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]


def identity_env(role: str, person: Person) -> dict[str, str]:
    """The environment that names `person` as git's AUTHOR or COMMITTER."""
    return {f"GIT_{role}_NAME": person.name, f"GIT_{role}_EMAIL": person.email}


# --- git's complaints ----------------------------------------------------------------------------
def _line_with(text: str, at: int) -> str:
    """The line of `text` that holds position `at`."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : end if end >= 0 else len(text)].strip()


def first_line(error: object) -> str:
    for line in str(error).splitlines():
        if line.strip():
            return line.strip()
    return ""


LOCK_HINT = (
    "another git command is running here; wait for it, or remove the .lock file it names if no"
    " git program is running"
)


def hint_for(stderr: str) -> str:
    if any(words in stderr for words in NO_SPACE_WORDS):  # before the lock file it names
        return "the disk is full: free some space on the workspace's disk"
    if "ignored by one of your .gitignore" in stderr:
        return "the path is git-ignored; remove it from .gitignore"
    if ".lock': File exists" in stderr or "index.lock" in stderr:
        return LOCK_HINT
    if "not a git repository" in stderr:
        return "run `feedbackd init` in the workspace"
    return "run the same git command in the workspace to see the whole message"


def added_files(out: bytes) -> Iterator[tuple[str, str]]:
    """(the commit's header, path) of each file added, newest commit first, as `git log
    --diff-filter=A --format=%x01HEADER --name-only -z` writes them."""
    for record in out.decode("utf-8", errors="surrogateescape").split("\x01")[1:]:
        header, _, names = record.partition("\0")
        for name in names.lstrip("\n").split("\0"):
            if name:
                yield header, name

"""The git that `eval` and `bisect` run besides what GitRepo reads: the commits of a range, those
that changed a file, one commit's subject and author, and the notes of
`refs/notes/feedbackd-eval`. Everything here reads objects or writes the notes ref alone: never
the work tree, the index, HEAD, a branch or the state of a user's `git bisect`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from feedbackd.core.errors import GitError
from feedbackd.edges.git.runner import first_line, git_in, hint_for, rel_path, revision

NOTES_REF = "refs/notes/feedbackd-eval"


def _git(root: Path, args: list[str], env: Mapping[str, str] | None = None) -> str:
    status, out, err = git_in(root, args, env=env)
    if status != 0:
        raise GitError(f"git {args[0]} failed: {first_line(err)}", hint=hint_for(err))
    return out.decode("utf-8", errors="replace")


def commits_between(root: Path, older: str, newer: str) -> list[str]:
    """The commits `newer` has that `older` lacks, oldest first."""
    out = _git(root, ["rev-list", "--reverse", revision(newer), f"^{revision(older)}"])
    return out.split()


def commits_changing(root: Path, older: str, newer: str, paths: list[str]) -> list[str]:
    """The commits of older..newer that changed any of `paths`, oldest first."""
    spec = [revision(newer), f"^{revision(older)}"]
    args = ["rev-list", "--reverse", "--no-renames", *spec, "--", *map(rel_path, paths)]
    return _git(root, args).split()


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    subject: str
    author: str  # "Name <email>"
    body: str
    date: str = ""  # the commit's time, ISO 8601


def commit_info(root: Path, commit: str) -> CommitInfo:
    spec = "--format=%H%x00%s%x00%an <%ae>%x00%cI%x00%b"
    out = _git(root, ["show", "-s", spec, revision(commit)])
    sha, subject, author, date, body = [*out.split("\0"), "", "", "", ""][:5]
    return CommitInfo(sha.strip(), subject, author, body, date)


def add_note(root: Path, commit: str, text: str, committer: Mapping[str, str]) -> None:
    """Store `text` as the note of `commit` in refs/notes/feedbackd-eval, replacing an older
    one (git writes a commit on the notes ref alone)."""
    args = ["notes", f"--ref={NOTES_REF}", "add", "-f", "-F", "-", revision(commit)]
    status, _, err = git_in(root, args, env=committer, stdin=text.encode("utf-8"))
    if status != 0:
        raise GitError(f"git notes failed: {first_line(err)}", hint=hint_for(err))


def note_of(root: Path, commit: str) -> str | None:
    """The note of `commit` in refs/notes/feedbackd-eval; None when it has none."""
    status, out, _ = git_in(root, ["notes", f"--ref={NOTES_REF}", "show", revision(commit)])
    return out.decode("utf-8", errors="replace") if status == 0 else None


def noted_commits(root: Path) -> list[str]:
    """The commits with a note in refs/notes/feedbackd-eval, the newest (by commit time)
    first; none when nothing was noted."""
    status, out, _ = git_in(root, ["notes", f"--ref={NOTES_REF}", "list"])
    if status != 0:  # no notes ref yet
        return []
    commits = [line.split()[1] for line in out.decode().splitlines() if len(line.split()) == 2]
    if not commits:
        return []
    listed = "\n".join(commits).encode() + b"\n"
    status, out, _ = git_in(root, ["rev-list", "--no-walk", "--stdin"], stdin=listed)
    return out.decode().split() if status == 0 else []


_REMOTE_NOTES = "refs/feedbackd/remote-notes/feedbackd-eval"
_NO_REMOTE_NOTES = "couldn't find remote ref"


def sync_notes(
    root: Path, remote: str, identity: Mapping[str, str], *, push: bool, timeout: float
) -> str:
    """Bring the remote's eval notes into ours (ours win for a revision noted on both sides),
    then push ours: `git log --notes=feedbackd-eval` shows every machine's reports. Empty when
    done, else what went wrong (never fatal: the notes wait for the next sync)."""
    spec = f"+{NOTES_REF}:{_REMOTE_NOTES}"
    status, _, err = git_in(root, ["fetch", "--quiet", "--no-tags", remote, spec], timeout=timeout)
    if status == 0:
        args = ["notes", f"--ref={NOTES_REF}", "merge", "-q", "-s", "ours", _REMOTE_NOTES]
        status, _, err = git_in(root, args, env=identity)
        if status != 0:
            return f"could not merge the eval notes of {remote}: {first_line(err)}"
    elif _NO_REMOTE_NOTES not in err:
        return f"could not fetch the eval notes of {remote}: {first_line(err)}"
    if not push or git_in(root, ["rev-parse", "-q", "--verify", NOTES_REF])[0] != 0:
        return ""
    status, _, err = git_in(
        root, ["push", "--quiet", remote, f"{NOTES_REF}:{NOTES_REF}"], timeout=timeout
    )
    return "" if status == 0 else f"could not push the eval notes to {remote}: {first_line(err)}"

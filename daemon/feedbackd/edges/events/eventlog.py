"""What the events read from git: the commits that reached the branch, which of them this clone
made, and the commit that first configured a hook. One git process each, whatever the count.

Which clone made a commit is read from the branch's reflog, which git keeps per clone: a commit
made here (by feedbackd, a command, or the user's own `git commit` or `git revert`) moved the
branch onto itself; a commit pulled from another clone arrived inside a sync's or a pull's move.
"""

from __future__ import annotations

from dataclasses import dataclass

from feedbackd.core.errors import GitError
from feedbackd.edges.git.history import log_records
from feedbackd.edges.git.repo import GitRepo, history_of
from feedbackd.edges.git.runner import revision

# `%m` (the side of `old...new`), then the four fields `log_records` reads; the author's time.
_FORMAT = "%m%H%x00%aI%x00%an <%ae>%x00%B%x00"
# Reflog subjects of a commit made in this clone; anything else (a sync, pull, merge, reset,
# checkout) brought commits made elsewhere, or moved among known ones.
_MADE_HERE = ("commit", "revert", "cherry-pick", "feedbackd: ")
_NOT_MADE_HERE = "feedbackd: sync"  # the whole subject of a sync's move (edges/git/remote.py)


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str
    author: str
    message: str


def head(repo: GitRepo) -> str | None:
    return repo.head()


def commits_between(repo: GitRepo, old: str | None, new: str) -> list[Commit]:
    """The commits `new` holds and `old` did not, oldest first (all of `new`'s when `old` is
    None). A rebase copies the commits `old` held that the remote lacked: a copy (same author,
    author time and subject as one of those) is not new."""
    span = [f"{revision(old)}...{revision(new)}"] if old else [revision(new)]
    out = repo._git.run(["log", "--left-right", "--topo-order", f"--format={_FORMAT}", *span])
    sides: dict[str, list[Commit]] = {"<": [], ">": []}
    for marked, date, author, message in log_records(out):
        if marked[:1] in sides:
            sides[marked[:1]].append(Commit(marked[1:], date, author, message))
    held = {same_act(commit) for commit in sides["<"]}
    return [commit for commit in reversed(sides[">"]) if same_act(commit) not in held]


def same_act(commit: Commit) -> tuple[str, str, str]:
    """What a rebased copy of a commit keeps: its author, author time and subject."""
    return commit.author, commit.date, commit.message.split("\n", 1)[0].strip()


def made_here(repo: GitRepo, limit: int | None = None) -> set[tuple[str, str, str]]:
    """The acts (as `same_act` tells them) of the commits this clone's reflog shows were
    committed here, among its newest `limit` entries (all of them when None). By act rather
    than by sha: a sync that rebases a commit made here onto the remote's keeps it this
    clone's."""
    form = "--format=%gs%x00%H%x00%aI%x00%an <%ae>%x00%B%x00"
    bounds = [f"-n{limit}"] if limit else []
    status, out, _ = repo._git.exec(["log", "-g", form, *bounds, "HEAD", "--"])
    found = set()
    for subject, sha, date, author, message in _reflog_records(out if status == 0 else b""):
        if subject.startswith(_MADE_HERE) and subject != _NOT_MADE_HERE:
            found.add(same_act(Commit(sha, date, author, message)))
    return found


def _reflog_records(out: bytes) -> list[tuple[str, str, str, str, str]]:
    parts = out.decode("utf-8", errors="replace").split("\0")
    return [
        (parts[i].strip(), parts[i + 1], parts[i + 2], parts[i + 3], parts[i + 4])
        for i in range(0, len(parts) - 4, 5)
    ]


def configured_at(repo: GitRepo, path: str, url: str) -> str | None:
    """The newest commit that added `url` to the file at `path` (relative to the workspace) and
    that HEAD holds: the hook's first configuration, as the history tells it. None when no
    commit holds it (the file is not committed, or lies outside the repository)."""
    if repo.head() is None:
        return None
    try:
        out = repo._git.run(["log", "--format=%H", f"-S{url}", "HEAD", "--", path])
    except GitError:
        return None
    history = history_of(repo)
    for sha in out.decode("ascii", errors="replace").split():
        text = history.blob(f"{sha}:{path}")
        if text is not None and url.encode() in text:
            return sha
    return None


def commit_before(repo: GitRepo, date: str) -> str | None:
    """The newest commit HEAD holds from before `date` (ISO 8601), or None."""
    out = repo._git.run(["rev-list", "-1", f"--before={date}", "HEAD", "--"])
    return out.decode("ascii").strip() or None


def resolve(repo: GitRepo, rev: str) -> str | None:
    """The commit a revision names, or None."""
    return repo.rev(f"{revision(rev)}^{{commit}}")

"""A draft that `git clean` removes while feedbackd commits it as new.

The chaos test found it: a user's `git reset --hard && git clean -fd` ran while the daemon
committed a draft that had just arrived. `git clean` takes no lock: it read the index before the
daemon's commit reached it, took the draft for untracked and removed it just after the daemon
had stored it. HEAD and the index then held the draft and the work tree did not, and `git status`
showed it deleted, a change nobody made on purpose, for good. Had the commit come a moment
sooner, `git clean` would have kept the draft as tracked: the daemon makes that so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from feedbackd.loop.reconcile import reconcile_all
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("w", "qi-0.json", draft({"title": "An earlier draft"}))
    reconcile_all(site.runtime(), ["w"])  # the agent's files are committed already
    return site


def _clean_when_head_moves(site: Site, command: str) -> None:
    """The user's command runs while the daemon moves HEAD: after its commit is made, before
    the user's index holds it (git's reference-transaction hook, git 2.28 and later)."""
    hook = site.root / ".git" / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\n[ "$1" = committed ] && {command}\nexit 0\n')
    hook.chmod(0o755)


def test_a_draft_git_clean_removes_during_its_commit_is_put_back_as_committed(
    site: Site,
) -> None:
    path = site.write("w", "qi-1.json", draft({"title": "First"}))
    written = path.read_bytes()
    _clean_when_head_moves(site, "git clean -fdq -- _data/agents")

    report = reconcile_all(site.runtime(), ["w"])

    assert report.problems == []
    assert site.git("log", "-1", "--format=%s").startswith("draft(w): 1 new draft (qi-1)")
    assert site.git("status", "--porcelain", "--untracked-files=all") == ""
    assert path.read_bytes() == written


def test_a_draft_moved_on_during_its_commit_is_not_put_back(site: Site) -> None:
    path = site.write("w", "qi-1.json", draft({"title": "First"}))
    approved = site.agent("w") / "approved"
    _clean_when_head_moves(site, f"mkdir -p {approved} && mv {path} {approved}/")

    reconcile_all(site.runtime(), ["w"])
    reconcile_all(site.runtime(), ["w"])  # the approval

    assert not path.exists()
    assert (approved / "qi-1.json").exists()
    assert site.git("log", "-1", "--format=%s").startswith("approve(w)")
    assert site.git("status", "--porcelain", "--untracked-files=all") == ""

"""Files that `git clean` removes while feedbackd commits them as new.

The chaos test found it: a user's `git reset --hard && git clean -fd` ran while the daemon
committed a draft that had just arrived. `git clean` takes no lock: it read the index before the
daemon's commit reached it, took the draft for untracked and removed it just after the daemon
had stored it. HEAD and the index then held the draft and the work tree did not, and `git status`
showed it deleted, a change nobody made on purpose, for good. Any file a commit adds can meet
it: an approved item, a new agent's feedback files, a rating's new month file. Had the commit
come a moment sooner, `git clean` would have kept the file as tracked: feedbackd makes that so.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.commits import recording
from feedbackd.app.ratings import rentals
from feedbackd.app.reconcile import reconcile_all
from tests.daemon_kit import committed, decided, subjects
from tests.workspace_kit import Site, draft

CLEAN = "git clean -fdq -- _data"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("w", "qi-0.json", draft({"title": "An earlier draft"}))
    reconcile_all(site.runtime(), ["w"])  # the agent's own files are committed already
    return site


def _when_head_moves(site: Site, command: str) -> None:
    """Run the user's command while feedbackd moves HEAD: after its commit is made, before the
    user's index holds it (git's reference-transaction hook, git 2.28 and later)."""
    hook = site.root / ".git" / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f'#!/bin/sh\n[ "$1" = committed ] && {command}\nexit 0\n')
    hook.chmod(0o755)


def _clean(site: Site) -> bool:
    return site.git("status", "--porcelain", "--untracked-files=all", "--", "_data") == ""


def test_a_new_draft_git_clean_removes_during_its_commit_is_put_back(site: Site) -> None:
    path = site.write("w", "qi-1.json", draft({"title": "First"}))
    written = path.read_bytes()
    _when_head_moves(site, CLEAN)

    report = reconcile_all(site.runtime(), ["w"])

    assert report.problems == []
    assert site.git("log", "-1", "--format=%s").startswith("draft(w): 1 new draft (qi-1)")
    assert _clean(site)
    assert path.read_bytes() == written


def test_an_approved_item_git_clean_removes_during_its_commit_is_put_back(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"title": "First"}))
    reconcile_all(site.runtime(), ["w"])
    site.write("w", "qi-1.json", draft({"title": "Better"}))
    approved = site.move("w", "qi-1.json", "approved")
    _when_head_moves(site, CLEAN)

    reconcile_all(site.runtime(), ["w"])

    assert site.git("log", "-1", "--format=%s").startswith("approve(w)")
    assert _clean(site)
    assert json.loads(approved.read_text())["contentData"]["title"] == "Better"
    [entry] = site.feedback("w")
    assert entry["corrected"] == "Better"


def test_a_new_month_file_of_ratings_git_clean_removes_is_put_back(site: Site) -> None:
    site.configure("agent_id: genesis-bot\ndaemon:\n  settle_ms: 0\n")
    _when_head_moves(site, CLEAN)
    doc = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": "w",
        "skill_id": "summarize",
        "rating": 4,
        "result_quality": "good",
        "would_reuse": True,
        "cost_value_ratio": "fair",
    }

    done = site.cli("feedback", "submit", "--json", json.dumps(doc), "--as", "buyer-1")

    assert done.returncode == 0, done.stderr
    assert "was removed while it was committed" in done.stderr
    assert _clean(site)
    [month_file] = (site.agent("w") / "ratings" / "summarize").glob("*.jsonl")
    assert json.loads(month_file.read_text())["transaction_id"] == doc["transaction_id"]


def test_a_draft_moved_on_during_its_commit_is_not_put_back(site: Site) -> None:
    path = site.write("w", "qi-1.json", draft({"title": "First"}))
    approved = site.agent("w") / "approved"
    _when_head_moves(site, f"mkdir -p {approved} && mv {path} {approved}/")

    reconcile_all(site.runtime(), ["w"])
    reconcile_all(site.runtime(), ["w"])  # the approval

    assert not path.exists()
    assert (approved / "qi-1.json").exists()
    assert site.git("log", "-1", "--format=%s").startswith("approve(w)")
    assert _clean(site)


def test_an_approval_git_clean_removes_before_its_commit_stores_it_is_not_recorded(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chaos test found it under load: a curator approved qi-1, then ran `git reset --hard
    && git clean -fd`. The reset put the draft back in queue/ beside the approval, the pass read
    both (the decision stands, the draft goes), and `git clean`, which takes no lock, removed
    the approval while the pass wrote the decision. The commit then held the decision's ledger
    line and lesson, deleted the draft, and had no approved file: the item was gone from every
    folder, and feedback.json kept a correction of nothing. The user threw the approval away;
    the draft stays as HEAD holds it."""
    site.write("w", "qi-1.json", draft({"title": "First"}))
    reconcile_all(site.runtime(), ["w"])
    site.write("w", "qi-1.json", draft({"title": "Better"}, {"title": "First"}))
    site.move("w", "qi-1.json", "approved")
    site.git("reset", "--hard", "-q")  # qi-1 in queue/ again; approved/qi-1.json untracked
    real_append = recording.append_line

    def cleaned_meanwhile(*args: Any, **kwargs: Any) -> None:
        site.git("clean", "-fdq", "--", "_data")  # after the file was checked, before the commit
        real_append(*args, **kwargs)

    monkeypatch.setattr(recording, "append_line", cleaned_meanwhile)
    reconcile_all(site.runtime(), ["w"])
    monkeypatch.setattr(recording, "append_line", real_append)
    reconcile_all(site.runtime(), ["w"])

    assert not committed(site, "approve(w)"), subjects(site)
    assert json.loads((site.agent("w") / "queue" / "qi-1.json").read_text())["contentData"] == {
        "title": "First"
    }
    assert decided(site, "w") == []
    assert site.feedback("w") == []
    assert _clean(site)


def test_a_rating_whose_new_month_file_git_clean_removes_before_its_commit_is_kept(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chaos test found it too: a user's `git clean` removed a rating's new month file
    after the daemon appended the rating, before its commit stored it. The commit held the
    buyer's memory lines alone, the inbox file was gone: the rating was stored nowhere. It is
    recorded again, once, from the inbox file it came from."""
    site.configure("agent_id: genesis-bot\ndaemon:\n  settle_ms: 0\n")
    doc = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": "w",
        "skill_id": "summarize",
        "requester_agent": "buyer-1",
        "rating": 4,
        "result_quality": "good",
        "would_reuse": True,
        "cost_value_ratio": "fair",
    }
    inbox = site.data / "inbox" / "ratings"
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / f"{doc['transaction_id']}.json").write_text(json.dumps(doc))
    real_commit = rentals.commit_change
    cleaned: list[bool] = []

    def cleaned_first(*args: Any) -> Any:
        if not cleaned:  # once: the user's command runs once
            cleaned.append(True)
            site.git("clean", "-fdq", "--", "_data")
        return real_commit(*args)

    monkeypatch.setattr(rentals, "commit_change", cleaned_first)
    reconcile_all(site.runtime())

    assert cleaned
    [month_file] = (site.agent("w") / "ratings" / "summarize").glob("*.jsonl")
    [line] = month_file.read_text().splitlines()
    assert json.loads(line)["transaction_id"] == doc["transaction_id"]
    assert not any(inbox.glob("*.json"))
    assert _clean(site)
    assert len(site.git("log", "--format=%s", "--grep=^rating(w").splitlines()) == 1

"""The user's own git commands under a running daemon: `git reset --hard`, `git stash -u`/`pop`.

Each test drives the real daemon through a burst of approvals and runs the real git command in
the middle of it, many times, with a fixed seed (printed on failure) choosing the moments.
Afterwards what git holds must be what the user's files say: no dropped decision comes back, no
decision is recorded twice, and `git status` shows nothing of feedbackd's.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from tests.daemon_kit import DaemonProcess, NotifyListener, committed, idle, wait_for
from tests.workspace_kit import Site, draft

pytestmark = pytest.mark.slow

AGENT = "qa"
SEED = int(os.environ.get("SEED", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "12"))
NO_ROUNDS = "ROUNDS=0: the test would check nothing"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    made = Site(tmp_path / "ws")
    made.configure("daemon:\n  settle_ms: 0\n")
    made.git("add", "-A")
    made.git("commit", "-qm", "settings")
    return made


def _approve(site: Site, item: str) -> None:
    """A curator's approval with a correction: the title edited, the file moved to approved/."""
    site.write(AGENT, f"{item}.json", draft({"title": f"{item} corrected"}))
    site.move(AGENT, f"{item}.json", "approved")


# What git says when it stops at once, changing nothing, because feedbackd holds the index lock:
# most commands name the lock; `git stash push` says nothing, `git stash pop` only this.
_LOCKED_STASH = ("", "The stash entry is kept in case you need it again.")


def _git_again_while_locked(site: Site, *args: str) -> None:
    """A git command run as a user does while feedbackd records: when it stops at once because
    feedbackd holds the index lock, it is run again (see docs/git.md, "Your own git commands")."""

    def ran() -> bool:
        done = subprocess.run(["git", *args], cwd=site.root, capture_output=True, text=True)
        locked = "index.lock" in done.stderr or (
            args[0] == "stash" and done.stderr.strip() in _LOCKED_STASH
        )
        assert done.returncode == 0 or locked, f"git {' '.join(args)}: {done.stderr}"
        return done.returncode == 0

    wait_for(ran, 30, f"git {' '.join(args)} to find the index lock free")


def _head_names(site: Site, folder: str) -> set[str]:
    listed = site.git("ls-tree", "--name-only", "HEAD", f"_data/agents/{AGENT}/{folder}/")
    # the .gitkeep of a new agent's folder is no item
    return {Path(name).stem for name in listed.split() if not Path(name).name.startswith(".")}


def _disk_names(site: Site, folder: str) -> set[str]:
    path = site.agent(AGENT) / folder
    return {p.stem for p in path.glob("*.json")} if path.is_dir() else set()


def _head_json_lines(site: Site, name: str) -> list[dict[str, object]]:
    done = subprocess.run(
        ["git", "show", f"HEAD:_data/agents/{AGENT}/{name}"],
        cwd=site.root,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return []
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    loaded: list[dict[str, object]] = json.loads(done.stdout)
    return loaded


def _feedbackd_changes(site: Site) -> list[str]:
    """`git status` lines of what feedbackd records (decisions, lessons, snippet): what HEAD
    and the work tree disagree on."""
    folder = f"_data/agents/{AGENT}"
    recorded = ["approved", "decisions.jsonl", "feedback.json", "prompt"]
    return site.git("status", "--porcelain", "--", *(f"{folder}/{p}" for p in recorded)).split(
        "\n"
    )[:-1]


def _assert_head_matches_files(site: Site, seed: int, round_no: int) -> None:
    where = f"(seed {seed}, round {round_no})"
    approved_head = _head_names(site, "approved")
    assert approved_head == _disk_names(site, "approved"), f"approved/ in HEAD vs disk {where}"
    ledger = [str(line["item"]) for line in _head_json_lines(site, "decisions.jsonl")]
    assert len(ledger) == len(set(ledger)), f"a decision recorded twice {where}: {ledger}"
    assert set(ledger) == approved_head, f"ledger vs approved/ {where}"
    lessons = {str(entry["queueItemId"]) for entry in _head_json_lines(site, "feedback.json")}
    assert lessons == approved_head, f"feedback.json vs approved/ {where}"
    assert _feedbackd_changes(site) == [], f"uncommitted {where}: {_feedbackd_changes(site)}"


def test_reset_hard_during_a_burst_never_brings_a_dropped_decision_back(site: Site) -> None:
    assert ROUNDS > 0, NO_ROUNDS
    rng = random.Random(SEED)
    items = [f"qi-{n}" for n in range(1, 241)]
    for item in items:
        site.write(AGENT, f"{item}.json", draft({"title": item}))
    listener = NotifyListener(site.root.parent)
    daemon = DaemonProcess(site, listener)
    try:
        daemon.wait_ready()
        wait_for(lambda: committed(site, f"draft({AGENT})"), what="the drafts")
        idle(daemon, quiet_s=0.5)
        waiting = list(items)
        for round_no in range(ROUNDS):
            base = site.git("rev-parse", "HEAD").strip()
            burst = [waiting.pop(0) for _ in range(6)]
            for item in burst:
                _approve(site, item)
            # Let the daemon record some of the burst, then drop what it recorded.
            time.sleep(rng.uniform(0.0, 0.4))
            _git_again_while_locked(site, "reset", "-q", "--hard", base)
            # An approval not yet recorded stays on disk while the reset brings its draft back
            # to queue/: the curator keeps the approval.
            for item in burst:
                if (site.agent(AGENT) / "approved" / f"{item}.json").exists():
                    (site.agent(AGENT) / "queue" / f"{item}.json").unlink(missing_ok=True)
            idle(daemon, quiet_s=0.5)
            _assert_head_matches_files(site, SEED, round_no)
    finally:
        daemon.close()
        listener.close()


def test_stash_and_pop_right_after_approvals_lose_nothing_and_pop_cleanly(site: Site) -> None:
    assert ROUNDS > 0, NO_ROUNDS
    rng = random.Random(SEED)
    items = [f"qi-{n}" for n in range(1, 121)]
    for item in items:
        site.write(AGENT, f"{item}.json", draft({"title": item}))
    notes = site.root / "notes.md"
    notes.write_text("the user's own notes\n")
    site.git("add", "notes.md")
    site.git("commit", "-qm", "notes")
    listener = NotifyListener(site.root.parent)
    daemon = DaemonProcess(site, listener)
    try:
        daemon.wait_ready()
        wait_for(lambda: committed(site, f"draft({AGENT})"), what="the drafts")
        idle(daemon, quiet_s=0.5)
        waiting = list(items)
        for round_no in range(ROUNDS):
            notes.write_text(f"the user's own notes, edited in round {round_no}\n")
            for _ in range(4):
                _approve(site, waiting.pop(0))
            time.sleep(rng.uniform(0.0, 0.06))  # 20-40 ms after an approval
            _git_again_while_locked(site, "stash", "push", "-u")
            _git_again_while_locked(site, "stash", "pop")
            idle(daemon, quiet_s=0.5)
            _assert_head_matches_files(site, SEED, round_no)
            assert notes.read_text() == f"the user's own notes, edited in round {round_no}\n"
            assert site.git("stash", "list") == "", f"a stash left behind (round {round_no})"
    finally:
        daemon.close()
        listener.close()


def _rating(number: int) -> dict[str, object]:
    return {
        "transaction_id": f"00000000-0000-4000-8000-{number:012d}",
        "provider_agent": "prov",
        "skill_id": "summarise",
        "requester_agent": f"buyer-{number % 3}",
        "rating": 4,
        "result_quality": "good",
        "would_reuse": True,
        "cost_value_ratio": "fair",
    }


def test_reset_hard_during_a_burst_of_ratings_loses_none(site: Site) -> None:
    """A rating file leaves the inbox only in the commit that stores it: a `git reset --hard`
    between storing and committing must not throw the rating away with the inbox file."""
    assert ROUNDS > 0, NO_ROUNDS
    rng = random.Random(SEED)
    inbox = site.data / "inbox" / "ratings"
    listener = NotifyListener(site.root.parent)
    daemon = DaemonProcess(site, listener)
    sent: list[str] = []
    try:
        daemon.wait_ready()
        for round_no in range(ROUNDS):
            for number in range(len(sent), len(sent) + 5):
                doc = _rating(number)
                (inbox / f".r{number}.tmp").write_text(json.dumps(doc))
                os.rename(inbox / f".r{number}.tmp", inbox / f"r{number}.json")
                sent.append(str(doc["transaction_id"]))
            time.sleep(rng.uniform(0.0, 0.3))
            _git_again_while_locked(site, "reset", "-q", "--hard")
            wait_for(lambda: not any(inbox.glob("*.json")), what="the inbox to empty")
            idle(daemon, quiet_s=0.5)
            stored = [
                json.loads(line)["transaction_id"]
                for line in site.git(
                    "show", "HEAD:_data/agents/prov/ratings/summarise/" + _month_file(site)
                ).splitlines()
            ]
            assert sorted(stored) == sorted(sent), f"(seed {SEED}, round {round_no})"
            assert site.git("status", "--porcelain", "--", "_data") == ""
    finally:
        daemon.close()
        listener.close()


def _month_file(site: Site) -> str:
    folder = site.agent("prov") / "ratings" / "summarise"
    return wait_for(lambda: next((p.name for p in folder.glob("*.jsonl")), None), what="a month")

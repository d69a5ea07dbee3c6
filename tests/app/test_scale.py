"""A big site: the start-up pass of a fresh clone must not start git once (or four times) per
draft. Every git process feedbackd starts is counted through a wrapper program
($GIT_PYTHON_GIT_EXECUTABLE, which feedbackd honours) that logs it and runs the real git.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from feedbackd.app.commands import queries
from tests.cli_kit import run_cli, run_process
from tests.conftest import git
from tests.git_kit import counting_git
from tests.workspace_kit import Site, draft


def fresh_clone_start_up(tmp_path: Path, drafts: int) -> list[str]:
    """`run --once` on a fresh clone of a workspace whose `drafts` drafts are committed; the
    git command lines it ran."""
    origin = Site(tmp_path / f"origin-{drafts}")
    for number in range(drafts):
        origin.write("w", f"qi-{number:04d}.json", draft({"title": f"Draft {number}"}))
    origin.reconcile()
    clone = tmp_path / f"clone-{drafts}"
    git(tmp_path, "clone", "-q", str(origin.root), str(clone))
    wrapper, log = counting_git(tmp_path / f"bin-{drafts}")
    env = {**os.environ, "GIT_PYTHON_GIT_EXECUTABLE": str(wrapper)}
    # A process of its own, started as before: a draft changed within SETTLED_S of the pass's
    # listing of untracked files is looked up on its own, and a pass started at once after
    # the clone finds them all that new.
    done = run_process(["-w", str(clone), "run", "--once", "--json"], env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["events"] == []  # nothing new: the drafts are on record
    return log.read_text().splitlines()


def test_a_fresh_clone_starts_with_git_calls_independent_of_the_drafts(tmp_path: Path) -> None:
    few = fresh_clone_start_up(tmp_path, 3)
    many = fresh_clone_start_up(tmp_path, 60)
    assert len(many) == len(few), "\n".join(many)


def test_a_fresh_clone_remembers_each_draft_as_first_committed(tmp_path: Path) -> None:
    """The snapshots taken from git on a fresh clone hold the drafts as the agent wrote them,
    not a curator's later edit: approving an edited draft records the edit."""
    origin = Site(tmp_path / "origin")
    for number in range(4):
        origin.write("w", f"qi-{number}.json", draft({"title": f"Draft {number}"}))
    origin.reconcile()
    origin.write("w", "qi-2.json", draft({"title": "Edited in the queue"}))
    origin.git("commit", "-qam", "a curator's edit, committed by hand")
    clone = Site.__new__(Site)
    clone.root = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin.root), str(clone.root))
    moved = clone.move("w", "qi-2.json", "approved")
    os.utime(moved, (moved.stat().st_mtime - 60,) * 2)  # checked out a minute before the move
    clone.reconcile()
    [entry] = clone.feedback("w")
    assert (entry["original"], entry["corrected"]) == ("Draft 2", "Edited in the queue")


def fresh_clone_of_agents(
    tmp_path: Path, agents: int, drafts_each: int = 3, new_each: int = 0
) -> Site:
    """A fresh clone (no .feedbackd/) of a workspace whose agents' drafts are all committed,
    then `new_each` new drafts written in each agent's queue/ of the clone."""
    origin = Site(tmp_path / f"origin-{agents}")
    for agent in range(agents):
        for number in range(drafts_each):
            item = f"qi-{agent:02d}-{number}"
            origin.write(f"a{agent:02d}", f"{item}.json", draft({"title": f"Draft {item}"}))
    origin.reconcile()
    clone = Site.__new__(Site)
    clone.root = tmp_path / f"clone-{agents}"
    git(tmp_path, "clone", "-q", str(origin.root), str(clone.root))
    for agent in range(agents):
        for number in range(new_each):
            item = f"new-{agent:02d}-{number}"
            clone.write(f"a{agent:02d}", f"{item}.json", draft({"title": f"New {item}"}))
    return clone


def git_calls_of_run_once(site: Site, folder: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The git command lines `run --once` ran, and the events it reported."""
    wrapper, log = counting_git(folder)
    env = {**os.environ, "GIT_PYTHON_GIT_EXECUTABLE": str(wrapper)}
    # (a process of its own: see fresh_clone_start_up)
    done = run_process(["-w", str(site.root), "run", "--once", "--json"], env=env)
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines(), json.loads(done.stdout)["events"]


@pytest.mark.slow
def test_a_fresh_clone_asks_git_about_many_agents_drafts_at_once(tmp_path: Path) -> None:
    """The first versions of the drafts of all agents come from one listing, one history walk
    and one cat-file: the git processes of a fresh clone's first pass do not grow with the
    agents (from a few on, what every agent's pass asks of HEAD is read ahead together). Each
    draft is then remembered without a file of its own."""
    few, _ = git_calls_of_run_once(fresh_clone_of_agents(tmp_path, 8), tmp_path / "bin-8")
    many_site = fresh_clone_of_agents(tmp_path, 24)
    many, events = git_calls_of_run_once(many_site, tmp_path / "bin-24")
    assert len(many) == len(few), "\n".join(many)
    assert events == []  # nothing new: the drafts are on record
    kept = many_site.root / ".feedbackd" / "snapshots" / "a17"
    assert sorted(path.name for path in kept.iterdir()) == [".in-git"]
    assert (kept / ".in-git").read_text().split() == [f"qi-17-{n}.json" for n in range(3)]


@pytest.mark.slow
def test_new_drafts_beside_a_fresh_clones_committed_ones_cost_no_lookups_per_agent(
    tmp_path: Path,
) -> None:
    """A draft git's listing names as untracked is new: no agent looks its drafts up again."""
    site = fresh_clone_of_agents(tmp_path, 12, new_each=1)
    calls, events = git_calls_of_run_once(site, tmp_path / "bin")
    lookups = [call for call in calls if call.startswith(("ls-files -z --others", "log --no-"))]
    assert len(lookups) == 2, "\n".join(calls)
    assert sorted(event["agent"] for event in events if event["event"] == "draft") == [
        f"a{agent:02d}" for agent in range(12)
    ]


def test_a_fresh_clone_shows_and_decides_drafts_against_their_first_commit(
    tmp_path: Path,
) -> None:
    """A draft remembered as git first had it: the queue view shows that version as the
    original, and approving the edited draft records the edit against it."""
    clone = fresh_clone_of_agents(tmp_path, 2)
    clone.reconcile()
    clone.write("a01", "qi-01-1.json", draft({"title": "Edited by the curator"}))
    [shown] = [d for d in queries.queue(clone.runtime(), "a01") if d["id"] == "qi-01-1"]
    [title] = [field for field in shown["fields"] if field["field"] == "title"]
    assert (title["original"], title["current"]) == ("Draft qi-01-1", "Edited by the curator")
    clone.move("a01", "qi-01-1.json", "approved")
    clone.reconcile()
    [entry] = clone.feedback("a01")
    assert (entry["original"], entry["corrected"]) == ("Draft qi-01-1", "Edited by the curator")


def test_a_snapshot_a_power_cut_left_empty_is_read_from_git(tmp_path: Path) -> None:
    """Copies of drafts are written without fsync (git holds every draft first): an empty one
    is passed over for the draft's commit."""
    site = Site(tmp_path / "site")
    site.write("w", "qi-1.json", draft({"title": "As the agent wrote it"}))
    site.reconcile()
    snapshot = site.root / ".feedbackd" / "snapshots" / "w" / "qi-1.json"
    assert snapshot.read_bytes()  # a new draft: a copy of the file
    snapshot.write_bytes(b"")  # what a power cut may leave of a file never fsynced
    site.write("w", "qi-1.json", draft({"title": "Edited"}))
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    [entry] = site.feedback("w")
    assert (entry["original"], entry["corrected"]) == ("As the agent wrote it", "Edited")


def test_an_idle_pass_asks_git_about_the_rental_logs_only(tmp_path: Path) -> None:
    """Recovering a rating cut short looks at the ratings and memory folders: git status over
    every agent folder would read each of a big site's drafts on every pass."""
    site = Site(tmp_path / "site")
    for number in range(5):
        site.write("w", f"qi-{number}.json", draft({"title": f"Draft {number}"}))
    site.reconcile()
    rating = {
        "transaction_id": "123e4567-e89b-12d3-a456-426614174000", "provider_agent": "prov",
        "skill_id": "code-run", "rating": 4, "result_quality": "good", "would_reuse": True,
        "cost_value_ratio": "fair",
    }  # fmt: skip
    assert (
        site.cli("feedback", "submit", "--as", "buyer", "--json", json.dumps(rating)).returncode
        == 0
    )
    wrapper, log = counting_git(tmp_path / "bin")
    env = {**os.environ, "GIT_PYTHON_GIT_EXECUTABLE": str(wrapper)}
    done = run_cli(["-w", str(site.root), "run", "--once", "--json"], env=env)
    assert done.returncode == 0, done.stderr
    statuses = [line for line in log.read_text().splitlines() if line.startswith("status")]
    assert statuses, log.read_text()
    for line in statuses:
        folders = line.split(" -- ", 1)[1].split()
        assert folders and all(f.endswith(("/ratings", "/memory")) for f in folders), line

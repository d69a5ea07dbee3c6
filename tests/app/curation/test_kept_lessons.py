"""Lessons are never dropped by accident: a deleted feedback.json comes back from history, and
wiping an agent's lessons on purpose is a command of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.daemon_kit import DaemonProcess, NotifyListener, idle, wait_for
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


def approve(site: Site, item: str, old: str = "old", new: str = "new") -> None:
    """A draft committed, then approved with one correction of its title."""
    site.write("w", f"{item}.json", draft({"title": old}))
    site.reconcile()
    site.write("w", f"{item}.json", draft({"title": f"{new} {item}"}))
    site.move("w", f"{item}.json", "approved")
    site.reconcile()


def problems_of(site: Site) -> list[dict[str, str]]:
    done = site.cli("doctor", "--json")
    problems: list[dict[str, str]] = json.loads(done.stdout)["problems"]
    return problems


def subject(site: Site, rev: str = "HEAD") -> str:
    return site.git("log", "-1", "--format=%s", rev).strip()


# --- a deleted feedback.json ----------------------------------------------------------------
def test_a_deleted_feedback_json_comes_back_with_every_lesson(site: Site) -> None:
    for item in ("qi-1", "qi-2", "qi-3"):
        approve(site, item)
    feedback = site.agent("w") / "feedback.json"
    snippet, head = site.prompt("w"), site.git("rev-parse", "HEAD")
    feedback.unlink()
    found = [p for p in problems_of(site) if p["path"] == "_data/agents/w/feedback.json"]
    assert found and "deleted" in found[0]["message"] and "git checkout HEAD" in found[0]["hint"]
    site.reconcile()
    assert len(site.feedback("w")) == 3 and site.prompt("w") == snippet
    assert site.git("rev-parse", "HEAD") == head  # nothing emptied, nothing to commit
    assert site.git("status", "--porcelain") == ""
    feedback.unlink()
    approve(site, "qi-4")  # the next decision adds its lesson to all the others
    assert len(site.feedback("w")) == 4
    committed = json.loads(site.git("show", "HEAD:_data/agents/w/feedback.json"))
    assert [e["queueItemId"] for e in committed] == ["qi-1", "qi-2", "qi-3", "qi-4"]
    assert not [p for p in problems_of(site) if p["path"].endswith("feedback.json")]


def test_the_deleted_feedback_of_many_agents_comes_back_in_one_pass(site: Site) -> None:
    """A pass over many agents asks git for their missing feedback.json files together; each
    agent gets its own lessons back, the one with no decision its empty list."""
    agents = [f"w{n}" for n in range(10)]
    for agent in agents:
        site.write(agent, "qi-1.json", draft({"title": "old"}))
    site.reconcile()
    for agent in agents[:-1]:  # the last one has no decision
        site.write(agent, "qi-1.json", draft({"title": f"new for {agent}"}))
        site.move(agent, "qi-1.json", "approved")
    site.reconcile()
    before = {agent: site.feedback(agent) for agent in agents}
    for agent in agents:
        (site.agent(agent) / "feedback.json").unlink()
    site.reconcile()
    assert {agent: site.feedback(agent) for agent in agents} == before
    assert [entry["corrected"] for entry in before["w3"]] == ["new for w3"]
    assert before["w9"] == []
    assert site.git("status", "--porcelain") == ""


@pytest.mark.slow
def test_the_daemon_puts_a_deleted_feedback_json_back_at_once(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    approve(site, "qi-1")
    approve(site, "qi-2")
    feedback, before = site.agent("w") / "feedback.json", site.feedback("w")
    head = site.git("rev-parse", "HEAD")
    daemon = start(site, listener)
    daemon.wait_ready()
    idle(daemon)
    feedback.unlink()
    wait_for(feedback.exists, what="feedback.json to be put back")
    assert site.feedback("w") == before
    idle(daemon)
    assert site.git("rev-parse", "HEAD") == head and site.git("status", "--porcelain") == ""
    assert "was deleted; put back" in daemon.log()


def test_a_committed_deletion_wipes_the_lessons_and_brings_none_back(site: Site) -> None:
    approve(site, "qi-1")
    site.git("rm", "-q", "_data/agents/w/feedback.json")
    site.git("commit", "-qm", "start over")
    assert not [p for p in problems_of(site) if p["path"].endswith("feedback.json")]
    approve(site, "qi-2")
    assert [e["queueItemId"] for e in site.feedback("w")] == ["qi-2"]
    assert "qi-1" not in site.prompt("w")


# --- forget --all -----------------------------------------------------------------------------
def test_forget_all_wipes_an_agents_lessons_in_one_commit(site: Site) -> None:
    approve(site, "qi-1")
    approve(site, "qi-2")
    before = site.feedback("w")
    done = site.cli("forget", "w", "--all", "--reason", "a new editorial line")
    assert done.returncode == 0, done.stderr
    assert site.feedback("w") == [] and "Corrected" not in site.prompt("w")
    assert subject(site) == "forget(w): all 2 entries"
    forgotten = (site.agent("w") / "forgotten.jsonl").read_text().splitlines()
    assert len(forgotten) == 2 and all("a new editorial line" in line for line in forgotten)
    assert site.git("status", "--porcelain") == ""
    # A merge that brings them back is undone by the next pass; the decisions stay.
    (site.agent("w") / "feedback.json").write_text(json.dumps(before, indent=2) + "\n")
    site.git("commit", "-qam", "a merge from a clone that still had them")
    site.reconcile()
    assert site.feedback("w") == []
    assert sorted(p.name for p in (site.agent("w") / "approved").glob("[!.]*")) == [
        "qi-1.json",
        "qi-2.json",
    ]


def test_forget_needs_an_entry_or_all_but_not_both(site: Site) -> None:
    approve(site, "qi-1")
    entry = site.feedback("w")[0]["id"]
    for args in (("forget", "w"), ("forget", "w", entry, "--all")):
        done = site.cli(*args)
        assert done.returncode == 2 and "--all" in done.stderr, done.stderr
    assert len(site.feedback("w")) == 1

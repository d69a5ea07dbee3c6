"""A decided file that changes after its decision was committed: committed again, and what the
change adds recorded, once (the real daemon, `run --once`, restarts)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.daemon_kit import (
    DaemonProcess,
    NotifyListener,
    committed,
    decided,
    idle,
    subjects,
    wait_for,
)
from tests.workspace_kit import Site, draft, settling_in

DRAFTED = "originalContentData:\n  title: Drafted\n  body: Drafted body\n"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return settling_in(tmp_path / "ws", 300)


@pytest.fixture
def daemon(site: Site, listener: NotifyListener, start: type[DaemonProcess]) -> DaemonProcess:
    started = start(site, listener)
    started.wait_ready()
    return started


def clean(site: Site) -> bool:
    return site.git("status", "--porcelain", "--", "_data") == ""


def entries(site: Site, agent: str) -> Counter[tuple[str | None, ...]]:
    return Counter(
        (e["type"], e.get("field"), e.get("original"), e.get("corrected"), e.get("notes"))
        for e in site.feedback(agent)
    )


@pytest.mark.slow
def test_a_yaml_file_finished_after_its_approval_is_committed_again_with_its_correction(
    site: Site, daemon: DaemonProcess
) -> None:
    """Written in two goes with a pause longer than daemon.settle_ms: the first half is
    decided, the second committed again with the correction it adds."""
    path = site.agent("y") / "approved" / "y2.yaml"
    path.parent.mkdir(parents=True)
    with open(path, "w") as writer:
        writer.write(DRAFTED + "contentData:\n  title: Edited\n")
        writer.flush()
        wait_for(lambda: committed(site, "approve(y): y2, 1 correction (title)"), what="approval")
        writer.write("  body: Edited body\n")

    wait_for(
        lambda: committed(site, "revise(y): y2 edited after its approval: 1 new correction (body)"),
        what="the second commit",
    )
    assert site.git("show", "HEAD:_data/agents/y/approved/y2.yaml") == path.read_text()
    assert entries(site, "y") == Counter(
        {
            ("correction", "title", "Drafted", "Edited", None): 1,
            ("correction", "body", "Drafted body", "Edited body", None): 1,
        }
    )
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["revise"] and trailers["Feedback-Item"] == ["y2"]
    assert trailers["Feedback-Fields"] == ["body"]
    idle(daemon)
    assert clean(site) and decided(site, "y") == ["y2"]


@pytest.mark.slow
def test_an_edit_after_the_approval_records_only_what_is_new(
    site: Site, daemon: DaemonProcess
) -> None:
    site.write("w", "d1.json", draft({"title": "Drafted", "excerpt": "Drafted excerpt"}))
    wait_for(lambda: committed(site, "draft(w): 1 new draft (d1)"), what="the draft commit")
    idle(daemon)
    site.write("w", "d1.json", draft({"title": "Edited", "excerpt": "Drafted excerpt"}))
    site.move("w", "d1.json", "approved")
    wait_for(lambda: committed(site, "approve(w): d1, 1 correction (title)"), what="approval")

    site.write("w", "d1.json", draft({"title": "Edited", "excerpt": "Edited excerpt"}), "approved")
    wait_for(lambda: committed(site, "revise(w): d1"), what="the second commit")
    site.write("w", "d1.json", draft({"title": "Edited", "excerpt": "Edited excerpt"}), "approved")
    site.write("w", "d1.json", draft({"title": "Better", "excerpt": "Edited excerpt"}), "approved")
    wait_for(lambda: len(site.feedback("w")) == 3, what="the third correction")
    idle(daemon)

    assert [s for s in subjects(site) if s.startswith("revise(")] == [
        "revise(w): d1 edited after its approval: 1 new correction (title)",
        "revise(w): d1 edited after its approval: 1 new correction (excerpt)",
    ]
    assert entries(site, "w") == Counter(
        {
            ("correction", "title", "Drafted", "Edited", None): 1,
            ("correction", "excerpt", "Drafted excerpt", "Edited excerpt", None): 1,
            ("correction", "title", "Drafted", "Better", None): 1,
        }
    )
    assert clean(site) and decided(site, "w") == ["d1"]


@pytest.mark.slow
def test_a_rejection_note_edited_afterwards_is_recorded_as_a_new_note(
    site: Site, daemon: DaemonProcess
) -> None:
    site.write("w", "d1.json", draft({"title": "T"}, {"title": "T"}, rejectionFeedback="Too dry"))
    site.move("w", "d1.json", "rejected")
    wait_for(lambda: committed(site, "reject(w): d1"), what="the rejection")
    site.write(
        "w",
        "d1.json",
        draft({"title": "T"}, {"title": "T"}, rejectionFeedback="Too dry: name a real case"),
        "rejected",
    )

    wait_for(
        lambda: committed(site, "revise(w): d1 edited after its rejection: a new note"),
        what="the second commit",
    )
    assert entries(site, "w") == Counter(
        {
            ("rejection", None, None, None, "Too dry"): 1,
            ("rejection", None, None, None, "Too dry: name a real case"): 1,
        }
    )
    idle(daemon)
    assert clean(site) and decided(site, "w", "rejected") == ["d1"]


def test_an_edit_made_while_the_daemon_is_stopped_is_recorded_once_at_start_up(
    site: Site,
) -> None:
    site.write("w", "d1.json", draft({"title": "Edited", "body": "Drafted"}, DRAFTED_JSON))
    site.move("w", "d1.json", "approved")
    site.reconcile()
    site.write(
        "w", "d1.json", draft({"title": "Edited", "body": "Edited"}, DRAFTED_JSON), "approved"
    )
    commits = site.commit_count()

    first = site.cli("run", "--once")
    again = site.cli("run", "--once")

    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert site.commit_count() == commits + 1
    assert subjects(site)[0] == "revise(w): d1 edited after its approval: 1 new correction (body)"
    assert entries(site, "w") == Counter(
        {
            ("correction", "title", "Drafted", "Edited", None): 1,
            ("correction", "body", "Drafted", "Edited", None): 1,
        }
    )
    assert clean(site)


def test_a_file_only_touched_after_its_decision_is_not_committed_again(site: Site) -> None:
    site.write("w", "d1.json", draft({"title": "Edited"}, {"title": "Drafted"}))
    site.move("w", "d1.json", "approved")
    site.reconcile()
    commits = site.commit_count()
    (site.agent("w") / "approved" / "d1.json").touch()

    done = site.cli("run", "--once")

    assert done.returncode == 0, done.stderr
    assert site.commit_count() == commits and len(site.feedback("w")) == 1


DRAFTED_JSON = {"title": "Drafted", "body": "Drafted"}


@pytest.mark.slow
def test_kill_9_in_a_burst_of_edits_after_approval_then_restart_records_each_once(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    names = [f"d{number:02d}" for number in range(30)]
    for name in names:
        site.write("w", f"{name}.json", draft({"title": "Edited", "body": "Drafted"}, DRAFTED_JSON))
        site.move("w", f"{name}.json", "approved")
    site.reconcile()
    daemon = start(site, listener)
    daemon.wait_ready()
    for name in names:
        site.write(
            "w", f"{name}.json", draft({"title": "Edited", "body": name}, DRAFTED_JSON), "approved"
        )
    wait_for(lambda: len(revisions(site)) >= 3, what="some revisions")
    daemon.kill_group()
    again = start(site, listener)
    again.wait_ready(count=2)

    wait_for(lambda: sorted(revisions(site)) == names, timeout=60, what="every revision")
    idle(again)
    assert revisions(site) == Counter({name: 1 for name in names})
    assert entries(site, "w") == Counter(
        {("correction", "title", "Drafted", "Edited", None): 30}
        | {("correction", "body", "Drafted", name, None): 1 for name in names}
    )
    assert clean(site) and sorted(decided(site, "w")) == names


def revisions(site: Site) -> Counter[str]:
    """How many revise commits each item has."""
    found: Counter[str] = Counter()
    for subject in subjects(site):
        if subject.startswith("revise("):
            found[subject.split(": ")[1].split(" ")[0]] += 1
    return found

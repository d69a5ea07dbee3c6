"""An item reviewed in two clones at once (SPEC section 15): each clone's pass records its
curator's review as "1 of 2"; once they sync, reviews.jsonl holds both, once each (merged by
id), and the item ends with one outcome, the same in both clones, with no conflict left."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from feedbackd.app.reconcile import reconcile_all
from tests.workspace_kit import Site, draft

ADA = "Ada <ada@example.org>"
BO = "Bo <bo@example.org>"
CY = "Cy <cy@example.org>"
FIRST = {"title": "Old title", "excerpt": "Short."}
EDITED = {"title": "Better title", "excerpt": "Short."}


class Clones:
    """A bare remote, seeded with one draft of agent w (a pass committed it), and two clones."""

    def __init__(self, tmp_path: Path) -> None:
        bare = tmp_path / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
        seed = Site(tmp_path / "seed")
        seed.configure("git:\n  remote: origin\nreview:\n  required: 2\n")
        seed.write("w", "qi-1.json", draft(FIRST))
        reconcile_all(seed.runtime(ADA))
        seed.git("add", "-A")
        seed.git("commit", "-qm", "Two curators review each draft")
        seed.git("remote", "add", "origin", str(bare))
        seed.git("push", "-q", "origin", "main")
        self.a, self.b = (self._clone(bare, tmp_path / name) for name in ("a", "b"))

    @staticmethod
    def _clone(bare: Path, root: Path) -> Site:
        subprocess.run(["git", "clone", "-q", str(bare), str(root)], check=True)
        return Site(root)  # `feedbackd init` in the clone: the merge driver registered

    def sync_both_ways(self) -> None:
        """`feedbackd sync` in A, in B (which pulls A's review), then A again (B's)."""
        for site in (self.a, self.b, self.a):
            done = site.cli("sync", "--json")
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["outcome"] == "synced", done.stdout


@pytest.fixture
def clones(tmp_path: Path) -> Clones:
    return Clones(tmp_path)


def review(site: Site, curator: str, to: str, content: dict[str, Any], notes: str = "") -> None:
    """`curator` edits the draft in queue/, moves it to `to`, and their machine's pass runs."""
    doc = draft(content, rejectionFeedback=notes) if notes else draft(content)
    site.write("w", "qi-1.json", doc)
    site.move("w", "qi-1.json", to)
    reconcile_all(site.runtime(curator))
    assert site.git("log", "-1", "--format=%s").strip().startswith("review(w): qi-1 by")


def reviews(site: Site) -> list[tuple[str, str]]:
    text = (site.agent("w") / "reviews.jsonl").read_text()
    return sorted((r["curator"], r["verdict"]) for r in map(json.loads, text.splitlines()))


def where(site: Site) -> list[str]:
    """The folders of agent w that hold qi-1."""
    return sorted(p.parent.name for p in site.agent("w").glob("*/qi-1.json"))


def outcomes(site: Site) -> list[str]:
    """The subjects of the commits that decided or disputed qi-1."""
    grep = "--grep=^Feedback-Event: \\(approve\\|reject\\|dispute\\)"
    return site.git("log", "--format=%s", grep).splitlines()


def same_in_both(clones: Clones) -> None:
    a, b = clones.a, clones.b
    assert a.git("rev-parse", "HEAD") == b.git("rev-parse", "HEAD")
    for site in (a, b):
        assert site.git("status", "--porcelain") == ""
        assert not (site.root / ".git" / "rebase-merge").exists()
        assert json.loads(site.cli("status", "--json").stdout)["problems"] == []


def test_agreeing_reviews_in_two_clones_make_one_decision(clones: Clones) -> None:
    review(clones.a, ADA, "approved", EDITED)
    review(clones.b, BO, "approved", EDITED)
    clones.sync_both_ways()
    same_in_both(clones)
    a = clones.a
    assert reviews(a) == [(ADA, "approve"), (BO, "approve")]
    assert outcomes(a) == ["approve(w): qi-1, 1 correction (title)"]
    assert where(a) == ["approved"]
    assert json.loads((a.agent("w") / "approved" / "qi-1.json").read_text())["contentData"] == (
        EDITED
    )
    [entry] = a.feedback("w")
    assert (entry["original"], entry["corrected"]) == ("Old title", "Better title")
    decided = a.git("log", "-1", "--format=%H", "--grep=^Feedback-Event: approve").strip()
    trailers = a.trailers(decided)
    assert a.git("log", "-1", "--format=%an <%ae>", decided).strip() == ADA  # the first review
    assert trailers["Co-authored-by"] == [BO]
    assert sorted(trailers["Feedback-Reviewers"][0].split(", ")) == [ADA, BO]
    ledger = (a.agent("w") / "decisions.jsonl").read_text().splitlines()
    assert [json.loads(line)["state"] for line in ledger] == ["approved"]


def test_agreeing_rejections_in_two_clones_make_one_decision(clones: Clones) -> None:
    review(clones.a, ADA, "rejected", FIRST, notes="Too long.")
    review(clones.b, BO, "rejected", FIRST, notes="Off topic.")
    clones.sync_both_ways()
    same_in_both(clones)
    a = clones.a
    assert outcomes(a) == ["reject(w): qi-1"]
    assert where(a) == ["rejected"]
    [entry] = a.feedback("w")
    assert sorted(entry["notes"].split("\n\n")) == ["Off topic.", "Too long."]


def test_differing_reviews_in_two_clones_make_one_dispute(clones: Clones) -> None:
    review(clones.a, ADA, "approved", EDITED)
    review(clones.b, BO, "rejected", FIRST, notes="Off topic.")
    clones.sync_both_ways()
    same_in_both(clones)
    a = clones.a
    assert reviews(a) == [(ADA, "approve"), (BO, "reject")]
    assert outcomes(a) == ["dispute(w): qi-1 (approve 1, reject 1)"]
    assert where(a) == ["disputed"]
    doc = json.loads((a.agent("w") / "disputed" / "qi-1.json").read_text())
    assert doc["contentData"] == FIRST
    assert sorted(r["curator"] for r in doc["reviews"]) == [ADA, BO]
    assert a.feedback("w") == []
    # Cy settles it in clone B; clone A pulls the decision.
    b = clones.b
    del doc["reviews"]
    doc["rejectionFeedback"] = "Off topic, as Bo says."
    b.write("w", "qi-1.json", doc, folder="disputed")
    b.move("w", "qi-1.json", "rejected", source="disputed")
    reconcile_all(b.runtime(CY))
    clones.sync_both_ways()
    same_in_both(clones)
    assert outcomes(a)[0] == "reject(w): qi-1"
    assert where(a) == ["rejected"]


@pytest.mark.parametrize("second", ["approved", "rejected"])
def test_both_clones_reaching_the_outcome_make_it_once(clones: Clones, second: str) -> None:
    """Each clone pulls the other's review by hand (`git pull --rebase`, no pass between), so
    the next pass of each reaches the outcome on its own; once they sync, it is one outcome."""
    a, b = clones.a, clones.b
    review(a, ADA, "approved", EDITED)
    notes = "Off topic." if second == "rejected" else ""
    review(b, BO, second, EDITED if not notes else FIRST, notes=notes)
    a.git("push", "-q", "origin", "main")
    b.git("pull", "-q", "--rebase", "origin", "main")
    a.git("pull", "-q", "--rebase", "origin", "main")  # nothing yet: B has not pushed
    b.git("push", "-q", "origin", "main")
    a.git("pull", "-q", "--rebase", "origin", "main")
    reconcile_all(a.runtime(CY))
    reconcile_all(b.runtime(CY))
    clones.sync_both_ways()
    same_in_both(clones)
    verdict = {"approved": "approve", "rejected": "reject"}[second]
    assert reviews(a) == sorted([(ADA, "approve"), (BO, verdict)])
    assert len(outcomes(a)) == 1, outcomes(a)
    assert where(a) == (["approved"] if second == "approved" else ["disputed"])
    ledger = (a.agent("w") / "decisions.jsonl").read_text().splitlines()
    assert len(ledger) == (1 if second == "approved" else 0)
    assert len(a.feedback("w")) == (1 if second == "approved" else 0)

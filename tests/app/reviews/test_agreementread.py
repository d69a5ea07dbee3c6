"""`feedbackd agreement`: the figures from the reviews and decisions a workspace's HEAD holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.workspace_kit import Site

AGENT = "writer"
ADA = "Ada <ada@example.org>"
BO = "Bo <bo@example.org>"
CY = "Cy <cy@example.org>"
_ids = iter(range(10**6))


def review(item: str, curator: str, verdict: str, at: str, **version: Any) -> dict[str, Any]:
    line: dict[str, Any] = {"id": f"rv-{next(_ids)}", "item": item, "curator": curator}
    line["verdict"] = verdict
    if verdict == "approve":
        line["content"] = version or {"title": "T"}
    else:
        line["notes"] = version.get("notes", "no")
    return {**line, "at": at}


def decision(item: str, state: str, at: str) -> dict[str, Any]:
    return {"id": f"d-{next(_ids)}", "item": item, "state": state, "at": at, "curator": ADA}


def commit_lines(site: Site, agent: str, name: str, lines: list[dict[str, Any]]) -> None:
    path = site.agent(agent) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    site.git("add", str(path))
    site.git("commit", "-q", "-m", f"{name} of {agent}")


def figures(site: Site, *args: str) -> dict[str, Any]:
    done = site.cli("agreement", *args, "--json")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """Ada and Bo agree on qi-1 (both approve) and qi-2 (both reject); on qi-3 Ada approves and
    Bo rejects, and Cy settled it as a rejection; qi-4 has one review."""
    site = Site(tmp_path / "ws")
    day = "2026-04-0{}T10:00:00.000Z"
    commit_lines(
        site,
        AGENT,
        "reviews.jsonl",
        [
            review("qi-1", ADA, "approve", day.format(1), title="Same"),
            review("qi-1", BO, "approve", day.format(1).replace("10:", "11:"), title="Same "),
            review("qi-2", ADA, "reject", day.format(2)),
            review("qi-2", BO, "reject", day.format(2).replace("10:", "11:")),
            review("qi-3", ADA, "approve", day.format(3)),
            review("qi-3", BO, "reject", day.format(3).replace("10:", "11:")),
            review("qi-4", CY, "approve", day.format(4)),
        ],
    )
    commit_lines(
        site,
        AGENT,
        "decisions.jsonl",
        [
            decision("qi-1", "approved", day.format(1)),
            decision("qi-2", "rejected", day.format(2)),
            decision("qi-3", "rejected", day.format(5)),
        ],
    )
    return site


def test_the_figures_of_an_agent(site: Site) -> None:
    result = figures(site, AGENT)
    assert result["agent"] == AGENT and result["since"] is None
    assert (result["items"], result["agreed"], result["disputed"], result["resolved"]) == (
        3,
        2,
        1,
        1,
    )
    assert result["verdict_agreement"] == 0.6667
    assert result["kappa"] == []  # fewer than 10 items in common
    # approve/approve 2 (qi-1), reject/reject 2 (qi-2), approve/reject 1 + 1 (qi-3): n = 6
    # α = 1 − (n − 1) · 2 / (3 · 3 + 3 · 3) = 1 − 10 / 18
    assert result["alpha"] == round(1 - 10 / 18, 4)
    assert result["fields"] == [{"field": "title", "items": 1, "agreement": 1.0}]
    assert result["curators"] == [
        {"curator": ADA, "reviews": 3, "decided": 3, "agreement": 0.6667},
        {"curator": BO, "reviews": 3, "decided": 3, "agreement": 1.0},
    ]


def test_every_agent_together_keeps_their_items_apart(site: Site) -> None:
    commit_lines(
        site,
        "editor",
        "reviews.jsonl",
        [
            review("qi-1", ADA, "reject", "2026-04-01T10:00:00.000Z"),
            review("qi-1", CY, "approve", "2026-04-01T12:00:00.000Z"),
        ],
    )
    result = figures(site)
    assert result["agent"] is None
    assert (result["items"], result["agreed"], result["disputed"]) == (4, 2, 2)


def test_since_a_date_or_a_duration(site: Site) -> None:
    assert figures(site, AGENT, "--since", "2026-04-02")["items"] == 2
    assert figures(site, AGENT, "--since", "1d")["items"] == 0


def test_only_what_head_holds_counts(site: Site) -> None:
    """A review written but not committed (a pass killed before its commit) is not yet one."""
    path = site.agent(AGENT) / "reviews.jsonl"
    extra = review("qi-4", ADA, "reject", "2026-04-04T11:00:00.000Z")
    path.write_text(path.read_text() + json.dumps(extra) + "\n")
    assert figures(site, AGENT)["items"] == 3


def test_a_damaged_review_is_an_error_naming_its_line(site: Site) -> None:
    commit_lines(site, AGENT, "reviews.jsonl", [review("qi-1", "Ada", "approve", "2026-04-01")])
    done = site.cli("agreement", AGENT)
    assert done.returncode == 1
    assert "invalid_feedback" in done.stderr
    assert "_data/agents/writer/reviews.jsonl line 1" in done.stderr


def test_an_unknown_agent_is_not_found(site: Site) -> None:
    done = site.cli("agreement", "writre")
    assert done.returncode == 1
    assert "not_found" in done.stderr and "did you mean writer?" in done.stderr


def test_a_workspace_without_reviews(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    assert figures(site)["items"] == 0
    done = site.cli("agreement")
    assert done.returncode == 0 and "No draft of every agent has two reviews yet." in done.stdout


def test_the_tables_for_a_reader(site: Site) -> None:
    done = site.cli("agreement", AGENT)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert (
        "writer: 3 items reviewed by two or more curators: 2 agreed, 1 disputed (1 resolved)"
        in text
    )
    assert "verdicts agree on 67% of items; Krippendorff's alpha 0.44" in text
    assert "Ada <ada@example.org>" in text and "title" in text

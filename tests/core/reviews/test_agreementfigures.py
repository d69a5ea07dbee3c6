"""Agreement between curators, against values computed by hand and the krippendorff package."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedbackd.core.people import Person
from feedbackd.core.reviews.agreementfigures import agreement, cohen_kappa, nominal_alpha
from feedbackd.core.reviews.reviewlog import ReviewRecord, Verdict

NOW = datetime(2026, 4, 8, 10, 0, tzinfo=UTC)
ADA = Person("Ada", "ada@example.org")
BO = Person("Bo", "bo@example.org")
CY = Person("Cy", "cy@example.org")
_count = iter(range(10**9))


def rv(
    item: str, who: Person, verdict: Verdict, content: Any = None, minutes: int = 0
) -> ReviewRecord:
    at = (NOW + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")
    if verdict == "approve":
        return ReviewRecord(f"rv-{next(_count)}", item, who, verdict, at, content or {"t": "x"})
    return ReviewRecord(f"rv-{next(_count)}", item, who, verdict, at, None, "no")


# Ada and Bo on ten items: both approve 1-5, split on 6 and 10, both reject 7-9.
ADA_SAYS = ["approve"] * 6 + ["reject"] * 4
BO_SAYS = ["approve"] * 5 + ["reject"] * 4 + ["approve"]


def ten_items() -> list[ReviewRecord]:
    reviews = []
    for number, (a, b) in enumerate(zip(ADA_SAYS, BO_SAYS, strict=True), start=1):
        reviews += [rv(f"qi-{number}", ADA, a), rv(f"qi-{number}", BO, b, minutes=1)]  # type: ignore[arg-type]
    return reviews


def test_cohen_kappa_by_hand() -> None:
    # p_o = 8/10; p_e = .6 × .6 + .4 × .4 = .52; κ = .28 / .48
    assert cohen_kappa(list(zip(ADA_SAYS, BO_SAYS, strict=True))) == pytest.approx(0.28 / 0.48)


def test_kappa_is_undefined_when_both_always_say_the_same_one_thing() -> None:
    assert cohen_kappa([("approve", "approve")] * 10) is None


def test_nominal_alpha_by_hand() -> None:
    # coincidences: approve/approve 10, reject/reject 6, approve/reject 2 + 2; n = 20
    # α = 1 − (n − 1) · 4 / (12 · 8 + 8 · 12) = 1 − 76 / 192
    units = [list(pair) for pair in zip(ADA_SAYS, BO_SAYS, strict=True)]
    assert nominal_alpha(units) == pytest.approx(1 - 76 / 192)


def test_alpha_is_undefined_without_two_values_or_pairs() -> None:
    assert nominal_alpha([["approve", "approve"], ["approve"]]) is None
    assert nominal_alpha([]) is None


LABEL = st.sampled_from(["approve", "reject", None])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(LABEL, min_size=3, max_size=3), min_size=2, max_size=25))
def test_alpha_is_the_krippendorff_packages(units: list[list[str | None]]) -> None:
    values = [[v for v in unit if v is not None] for unit in units]
    mine = nominal_alpha(values)
    data = np.array(
        [[{"approve": 1.0, "reject": 0.0}.get(u[c] or "", np.nan) for u in units] for c in range(3)]
    )
    pairable = sum(len(v) >= 2 for v in values)
    kinds = {v for unit in values if len(unit) >= 2 for v in unit}
    if pairable == 0 or len(kinds) < 2:
        assert mine is None
        return
    theirs = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert mine is not None and math.isclose(mine, theirs, abs_tol=1e-9)


def test_the_figures_of_ten_items_two_curators() -> None:
    decided: dict[str, Verdict] = {"qi-6": "reject", "qi-10": "approve", "qi-1": "approve"}
    result = agreement(ten_items(), decided).to_json()
    assert result["items"] == 10
    assert (result["agreed"], result["disputed"], result["resolved"]) == (8, 2, 2)
    assert result["verdict_agreement"] == 0.8
    assert result["kappa"] == [
        {"a": "Ada <ada@example.org>", "b": "Bo <bo@example.org>", "items": 10, "kappa": 0.5833}
    ]
    assert result["alpha"] == round(1 - 76 / 192, 4)
    # Ada's verdict stood on qi-1, not on qi-6 or qi-10; Bo's on all three.
    assert result["curators"] == [
        {"curator": "Ada <ada@example.org>", "reviews": 10, "decided": 3, "agreement": 0.3333},
        {"curator": "Bo <bo@example.org>", "reviews": 10, "decided": 3, "agreement": 1.0},
    ]


def test_a_pair_with_fewer_than_ten_items_in_common_has_no_kappa() -> None:
    assert agreement(ten_items()[:18], {}).kappa == ()


def test_items_with_one_review_do_not_count_and_a_curator_counts_once() -> None:
    reviews = [
        rv("qi-1", ADA, "approve"),
        rv("qi-2", ADA, "reject"),
        rv("qi-2", ADA, "approve", minutes=1),  # a repeat, as two clones might leave it
        rv("qi-2", BO, "reject", minutes=2),
    ]
    result = agreement(reviews, {})
    assert (result.items, result.agreed, result.disputed) == (1, 1, 0)


def test_approvals_of_different_versions_agree_on_the_verdict_not_the_item() -> None:
    reviews = [
        rv("qi-1", ADA, "approve", {"title": "A", "body": "x"}),
        rv("qi-1", BO, "approve", {"title": "A  ", "body": "y"}, minutes=1),
        rv("qi-2", ADA, "approve", {"title": "B"}),
        rv("qi-2", BO, "approve", {"title": "C"}, minutes=1),
        rv("qi-3", ADA, "approve", {"title": "D"}),
        rv("qi-3", BO, "reject", minutes=1),
    ]
    result = agreement(reviews, {}).to_json()
    assert (result["agreed"], result["disputed"], result["verdict_agreement"]) == (0, 3, 0.6667)
    assert result["fields"] == [
        {"field": "body", "items": 1, "agreement": 0.0},
        {"field": "title", "items": 2, "agreement": 0.5},
    ]


def test_since_leaves_out_older_reviews() -> None:
    reviews = [rv("qi-1", ADA, "approve"), rv("qi-1", BO, "approve", minutes=5)]
    reviews += [rv("qi-2", ADA, "reject", minutes=10), rv("qi-2", CY, "reject", minutes=11)]
    result = agreement(reviews, {}, since=NOW + timedelta(minutes=1))
    assert result.items == 1
    assert [c.curator for c in result.curators] == ["Ada <ada@example.org>", "Cy <cy@example.org>"]


def test_nothing_reviewed_twice_gives_empty_figures() -> None:
    assert agreement([], {}).to_json() == {
        "items": 0,
        "agreed": 0,
        "disputed": 0,
        "resolved": 0,
        "verdict_agreement": None,
        "kappa": [],
        "alpha": None,
        "fields": [],
        "curators": [],
    }

"""The price ledger's records and what they tell about a skill's price history (pure)."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime, timedelta

import pytest

from feedbackd.core.ids import PRICE_CHANGE, is_derived_id, new_id
from feedbackd.core.ratings.priceledger import (
    PriceRecord,
    new_price_record,
    parse_price_ledger,
    price_history,
)
from feedbackd.core.ratings.skillrules import PriceHistory
from feedbackd.edges.randomness import random_chars

NOW = datetime(2026, 4, 8, 10, 0, tzinfo=UTC)


def test_a_cut_has_the_same_id_wherever_and_whenever_it_is_made() -> None:
    def cut(old: str, new: str, after: str | None, hours: int = 0) -> str:
        made = NOW + timedelta(hours=hours)
        return new_price_record("s", old, new, "why", made, after=after).id

    assert cut("20", "19", None) == cut("20", "19", None, hours=3)  # two machines, one cut
    assert cut("20", "19", "price-1") == cut("20", "19", "price-1", hours=1)
    assert cut("20", "19", None) != cut("20", "19", "price-1")  # after another change: new
    assert cut("20", "19", None) != cut("20", "18", None)
    # The merge knows such an id from a random one (`price-{ms}-{6 hex}`), and its memory's.
    assert is_derived_id(cut("20", "19", None)) and is_derived_id("mem-" + cut("1", "2", None))
    assert not is_derived_id(new_id(PRICE_CHANGE, NOW, random_chars))


def test_a_new_record_is_one_line_that_reads_back() -> None:
    record = new_price_record("claude-code-run", "20", "19", "3 of 3 buyers said overpriced", NOW)
    assert re.fullmatch(r"price-[0-9a-f]{16}", record.id)
    line = record.line()
    assert "\n" not in line
    assert list(json.loads(line)) == ["id", "skill", "priceOld", "priceNew", "reason", "createdAt"]
    assert json.loads(line)["createdAt"] == "2026-04-08T10:00:00.000Z"
    assert parse_price_ledger(line + "\n") == [record]


def test_a_record_says_what_changed_for_the_commit_and_the_memory() -> None:
    cut = new_price_record("data-cleanup", "12.5", "11.88", "3 of 4 buyers said overpriced", NOW)
    assert cut.summary == "12.5 → 11.88 (3 of 4 buyers said overpriced)"
    assert cut.memory_text == (
        "Price of data-cleanup cut from 12.5 to 11.88 because 3 of 4 buyers said overpriced"
    )
    raised = new_price_record("data-cleanup", "20", "21", "5 of 5 rated 5", NOW)
    assert raised.memory_text.startswith("Price of data-cleanup raised from 20 to 21 ")


def test_damaged_lines_are_skipped_and_named(caplog: pytest.LogCaptureFixture) -> None:
    good = new_price_record("s", "40", "20", "by hand", NOW)
    no_time = good.model_copy(update={"id": "price-2", "createdAt": "soon"})
    text = "\n".join(["{half", good.line(), "", "[1]", no_time.line(), '{"id": "x"}'])
    logger = logging.getLogger("feedbackd")  # the CLI may have stopped it propagating
    logger.addHandler(caplog.handler)
    try:
        assert parse_price_ledger(text, "agents/a/pricing.jsonl") == [good]
    finally:
        logger.removeHandler(caplog.handler)
    skipped = {r.getMessage() for r in caplog.records}  # once per handler that saw it
    assert skipped == {
        f"agents/a/pricing.jsonl, line {n}: not a price change record; ignored"
        for n in (1, 4, 5, 6)
    }


def test_unknown_fields_written_by_other_tools_are_kept() -> None:
    line = new_price_record("s", "20", "19", "why", NOW).line()[:-1] + ', "by": "tool"}'
    [record] = parse_price_ledger(line)
    assert isinstance(record, PriceRecord) and json.loads(record.line())["by"] == "tool"


def test_history_takes_the_base_from_the_first_change_and_the_time_of_the_last() -> None:
    later, earliest = NOW + timedelta(days=3), NOW - timedelta(days=9)
    history = price_history([(NOW, "19"), (later, "18.05"), (earliest, "20")])
    assert history == PriceHistory(20.0, later)


@pytest.mark.parametrize("old", ["", "free", "-1", "inf", "nan"])
def test_a_first_change_without_a_usable_old_price_gives_no_base(old: str) -> None:
    assert price_history([(NOW, old), (NOW + timedelta(days=1), "19")]).base is None


def test_no_changes_no_history() -> None:
    assert price_history([]) == PriceHistory()

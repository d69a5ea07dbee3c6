"""Tolerant JSONL reading: every line that reads, in order, and each bad line reported once."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tracemalloc
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from feedbackd.core.curation.decisions import new_record, parse_ledger
from feedbackd.core.formats.jsonl import parse_jsonl
from feedbackd.edges.randomness import random_chars


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    n: int


def read(text: str) -> tuple[list[tuple[int, Any]], list[tuple[int, str]]]:
    bad: list[tuple[int, str]] = []
    good = list(parse_jsonl(text, Line.model_validate_json, lambda n, why: bad.append((n, why))))
    return good, bad


def test_good_lines_come_with_their_numbers_and_bad_ones_are_reported() -> None:
    text = "\n".join(
        [
            '{"id": "a", "n": 1}',
            "",
            "{half a line",
            '{"id": "b", "n": "two"}',
            "   ",
            "[1, 2]",
            '{"id": "c", "n": 3, "extra": true}',
            '{"id": "d", "n": 4}',
            "",
        ]
    )
    good, bad = read(text)
    assert [(number, record.id) for number, record in good] == [(1, "a"), (8, "d")]
    assert [number for number, _ in bad] == [3, 4, 6, 7]  # blank lines are not bad
    reasons = dict(bad)
    assert reasons[3].startswith("Invalid JSON")
    assert "integer" in reasons[4]
    assert "Extra inputs" in reasons[7]


def test_the_parser_may_refuse_a_line_with_its_own_reason() -> None:
    def small(line: str) -> Line:
        record = Line.model_validate_json(line)
        if record.n > 9:
            raise ValueError(f"n {record.n} is too big")
        return record

    bad: list[tuple[int, str]] = []
    text = '{"id": "a", "n": 10}\n{"id": "b", "n": 1}\n'
    good = list(parse_jsonl(text, small, lambda n, why: bad.append((n, why))))
    assert [record.id for _, record in good] == ["b"]
    assert bad == [(1, "n 10 is too big")]


def test_line_breaks_inside_values_and_windows_line_ends_stay_one_record() -> None:
    values = ["para\u2028graph", "next\x85line", "page\u2029two"]
    text = "".join(
        json.dumps({"id": v, "n": i}, ensure_ascii=False) + "\r\n" for i, v in enumerate(values)
    )
    good, bad = read(text)
    assert bad == []
    assert [(number, record.id) for number, record in good] == [
        (1, values[0]),
        (2, values[1]),
        (3, values[2]),
    ]


def test_nothing_to_read_is_no_records() -> None:
    assert read("") == ([], [])
    assert read("\n\n") == ([], [])


def test_the_decisions_ledger_keeps_a_curator_name_with_a_line_separator(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = datetime(2026, 4, 8, tzinfo=UTC)
    odd = new_record(
        "qi-1", "approved", now, random_chars, curator="Ada\u2028Curator <ada@example.org>"
    )
    plain = new_record("qi-2", "rejected", now, random_chars)
    text = odd.line() + "\n" + "not json\n" + plain.line() + "\n"
    logger = logging.getLogger("feedbackd")  # the CLI may have stopped it propagating
    logger.addHandler(caplog.handler)
    try:
        records = parse_ledger(text, "decisions.jsonl")
    finally:
        logger.removeHandler(caplog.handler)
    assert records == [odd, plain]
    assert "decisions.jsonl line 2 is not a decision record; ignored" in caplog.text


def test_a_ledger_line_reads_back_to_the_same_line_and_unknown_keys_are_read_past() -> None:
    now = datetime(2026, 4, 8, tzinfo=UTC)
    record = new_record(
        "qi-1", "approved", now, random_chars, file="a/approved/qi-1.json", curator="Ada",
        fields=["title"], entries=["fb-1"],
    )  # fmt: skip
    assert list(json.loads(record.line())) == [
        "id", "item", "state", "at", "file", "curator", "fields", "entries"
    ]  # fmt: skip
    assert parse_ledger(record.line()) == [record]
    newer = json.dumps({**json.loads(record.line()), "reviewedBy": "someone"})
    assert parse_ledger(newer) == [record]
    assert (
        parse_ledger(json.dumps({"id": "d-1", "item": "qi-1", "state": "maybe", "at": "x"})) == []
    )


def test_a_ledger_read_back_keeps_a_decision_in_under_900_bytes() -> None:
    # Every pass reads the agent's whole ledger: its size is the pass's memory peak.
    now = datetime(2026, 4, 8, tzinfo=UTC)
    text = "\n".join(
        new_record(
            f"soak-{n:05d}", "approved", now, random_chars,
            file=f"_data/agents/w/approved/soak-{n:05d}.json",
            curator="Ada Curator <ada@example.org>", fields=["title"], entries=[f"fb-{n}"],
        ).line()
        for n in range(2000)
    )  # fmt: skip
    tracemalloc.start()
    try:
        records = parse_ledger(text)
        size = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(records) == 2000
    assert size / len(records) < 900, f"{size / len(records):.0f} bytes a decision"


# Each record parses strings it will never see again (ids, times): pydantic's process-wide cache
# of parsed JSON strings would hold up to 16,384 of them for good.
_PARSE_AND_MEASURE = """
import gc, json, tracemalloc, uuid
from feedbackd.core.curation.decisions import parse_ledger
from feedbackd.core.ratings.memory import MemoryRecord
from feedbackd.core.ratings.priceledger import parse_price_ledger

def when(n):
    return f"2026-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"

def lines(make):
    return "\\n".join(json.dumps(make(str(uuid.uuid4()), n)) for n in range(6000))

ledger = lines(lambda u, n: {"id": u, "item": "i" + u, "state": "approved", "at": when(n)})
prices = lines(lambda u, n: {"id": u, "skill": "s", "priceOld": u, "priceNew": u,
                             "reason": u, "createdAt": when(n)})
memory = lines(lambda u, n: {"id": u, "category": "cases", "importance": 0.5, "content": u,
                             "source": u, "createdAt": when(n)}).split("\\n")
tracemalloc.start()
before = tracemalloc.get_traced_memory()[0]
records = [parse_ledger(ledger), parse_price_ledger(prices),
           [MemoryRecord.model_validate_json(line) for line in memory]]
assert sum(map(len, records)) == 18000
del records
gc.collect()
print(tracemalloc.get_traced_memory()[0] - before)
"""


def test_records_read_from_jsonl_leave_no_strings_behind_once_dropped() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PARSE_AND_MEASURE],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    kept = int(result.stdout)
    assert kept < 100_000, f"{kept:,} bytes still held after the records were dropped"

"""Append-only logs: a second line lands after the first, and a cut-short line is terminated."""

from __future__ import annotations

from pathlib import Path

from feedbackd.edges.files import append_line


def test_lines_append_in_order(tmp_path: Path) -> None:
    log = tmp_path / "ratings" / "2026-11.jsonl"
    append_line(log, '{"n": 1}')
    append_line(log, '{"n": 2}\n')
    assert log.read_text(encoding="utf-8") == '{"n": 1}\n{"n": 2}\n'


def test_a_line_cut_short_by_a_crash_is_terminated_first(tmp_path: Path) -> None:
    log = tmp_path / "cases.jsonl"
    log.write_bytes(b'{"n": 1}\n{"n": 2')
    append_line(log, '{"n": 3}')
    assert log.read_text(encoding="utf-8").splitlines() == ['{"n": 1}', '{"n": 2', '{"n": 3}']

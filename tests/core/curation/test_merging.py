"""The merge driver: pure three-way merges that every machine computes alike (what either side
added is kept, what one side removed goes), and the command git runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedbackd.app.workspace.init import init_workspace
from feedbackd.cli.merge_driver import main
from feedbackd.core.config import parse_settings
from feedbackd.core.curation.merging import (
    kind_of,
    merge_feedback,
    merge_generated,
    merge_jsonl,
)
from feedbackd.core.errors import MergeRefused
from feedbackd.core.feedbackcap import written_max_entries
from tests.cli_kit import run_cli
from tests.conftest import git

CAP = 200


def entry(n: int, *, notes: str | None = None, when: str | None = None) -> dict[str, Any]:
    value: dict[str, Any] = {
        "id": f"fb-{n:04d}",
        "type": "rejection" if notes is not None else "correction",
        "queueItemId": f"qi-{n}",
        "createdAt": when or f"2026-04-08T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
    }
    if notes is not None:
        value["notes"] = notes
    else:
        value.update(field="title", original=f"old {n}", corrected=f"new {n}")
    return value


def doc(*entries: dict[str, Any]) -> bytes:
    return (json.dumps(list(entries), indent=2) + "\n").encode()


def ids(data: bytes) -> list[str]:
    return [value["id"] for value in json.loads(data)]


def line(**fields: Any) -> str:
    return json.dumps(fields)


def lines(*values: str) -> bytes:
    return "".join(value + "\n" for value in values).encode()


# --- feedback.json ------------------------------------------------------------------------------
def test_feedback_keeps_what_both_sides_added_oldest_first() -> None:
    base = doc(entry(1))
    ours = doc(entry(1), entry(3))
    theirs = doc(entry(1), entry(2))
    merged = merge_feedback(base, ours, theirs, CAP)
    assert ids(merged) == ["fb-0001", "fb-0002", "fb-0003"]
    assert merged.endswith(b"]\n") and b'\n  {\n    "id"' in merged  # 2-space JSON, newline


def test_feedback_cap_keeps_the_newest_of_the_merge() -> None:
    ours = doc(*(entry(n) for n in range(0, 10, 2)))
    theirs = doc(*(entry(n) for n in range(1, 10, 2)))
    assert ids(merge_feedback(b"", ours, theirs, 3)) == ["fb-0007", "fb-0008", "fb-0009"]


def test_feedback_same_time_from_two_sides_is_ordered_by_id() -> None:
    when = "2026-04-08T10:00:00.000Z"
    merged = merge_feedback(b"[]", doc(entry(9, when=when)), doc(entry(2, when=when)), CAP)
    assert ids(merged) == ["fb-0002", "fb-0009"]


def test_feedback_same_time_keeps_the_order_each_side_holds() -> None:
    """Entries of one pass share their time: they stay in the order they were decided, through
    a revert (one side lacks an older entry) and a merge with the other side's own pass."""
    when, later = "2026-04-08T10:00:00.000Z", "2026-04-08T10:00:00.001Z"
    pass_entries = [entry(n, when=when) for n in (9, 2, 5, 1)]
    base = doc(entry(0), *pass_entries)
    reverted = doc(*pass_entries)
    assert ids(merge_feedback(base, base, reverted, CAP)) == [
        "fb-0009",
        "fb-0002",
        "fb-0005",
        "fb-0001",
    ]
    # Two clones' passes at the same instant: each one's entries stay together, in its order.
    theirs = doc(entry(0), *pass_entries, entry(7, when=later), entry(3, when=later))
    ours = doc(entry(0), *pass_entries, entry(8, when=later))
    for one, two in ((ours, theirs), (theirs, ours)):
        merged = ids(merge_feedback(base, one, two, CAP))
        assert merged[5:] == ["fb-0007", "fb-0003", "fb-0008"]


def test_feedback_times_with_offsets_sort_by_the_instant() -> None:
    early = entry(1, when="2026-04-08T12:00:00+02:00")  # 10:00 UTC
    late = entry(2, when="2026-04-08T10:30:00.000Z")
    assert ids(merge_feedback(b"", doc(late), doc(early), CAP)) == ["fb-0001", "fb-0002"]


def test_an_entry_edited_on_one_side_wins_over_the_unchanged_one() -> None:
    base = doc(entry(1, notes="first"))
    edited = doc(entry(1, notes="edited"))
    for ours, theirs in ((base, edited), (edited, base)):
        merged = json.loads(merge_feedback(base, ours, theirs, CAP))
        assert merged == [entry(1, notes="edited")]


def test_an_entry_edited_on_both_sides_gets_the_same_answer_either_way() -> None:
    base = doc(entry(1, notes="first"))
    one, two = doc(entry(1, notes="one")), doc(entry(1, notes="two"))
    assert merge_feedback(base, one, two, CAP) == merge_feedback(base, two, one, CAP)
    assert len(json.loads(merge_feedback(base, one, two, CAP))) == 1


def test_an_entry_one_side_removed_goes_unless_the_other_side_edited_it() -> None:
    """A `git revert` of a decision is such a merge: its parent lacks the decision's entries."""
    base = doc(entry(1), entry(2, notes="x"), entry(3))
    removed = doc(entry(1), entry(3))
    later = doc(entry(1), entry(2, notes="x"), entry(3), entry(4))
    for ours, theirs in ((removed, later), (later, removed)):
        assert ids(merge_feedback(base, ours, theirs, CAP)) == ["fb-0001", "fb-0003", "fb-0004"]
    edited = doc(entry(1), entry(2, notes="edited"), entry(3))
    assert ids(merge_feedback(base, removed, edited, CAP)) == ["fb-0001", "fb-0002", "fb-0003"]


def test_legacy_entries_are_stored_in_the_full_shape() -> None:
    legacy = json.dumps([{"original": "a", "corrected": "b"}]).encode()
    merged = json.loads(merge_feedback(b"", legacy, doc(entry(1)), CAP))
    assert merged[0]["id"].startswith("legacy-") and merged[0]["type"] == "correction"
    assert merged[0]["createdAt"] == "1970-01-01T00:00:00.000Z"


def test_unknown_fields_of_an_entry_are_kept() -> None:
    extra = {**entry(1), "reviewer": "ada"}
    assert json.loads(merge_feedback(b"", doc(extra), b"[]", CAP)) == [extra]


def test_empty_sides_and_an_unreadable_ancestor_are_fine() -> None:
    assert merge_feedback(b"", b"", b"", CAP) == b"[]\n"
    assert ids(merge_feedback(b"{not json", doc(entry(1)), b"", CAP)) == ["fb-0001"]


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (b'[{"id": "x", ', "not valid JSON"),
        (b'{"id": "x"}', "JSON array"),
        (b"[1]", "not an object"),
        (b'[{"id": "x", "type": "praise", "createdAt": "2026-01-01T00:00:00.000Z"}]', "type"),
        (b'[{"id": "", "type": "edit", "createdAt": "2026-01-01T00:00:00.000Z"}]', "id"),
        (b'[{"type": "edit", "notes": "n", "createdAt": "x"}]', "id"),
        (b"\xff\xfe[]", "not UTF-8"),
    ],
)
def test_a_side_that_is_not_valid_feedback_is_refused(bad: bytes, says: str) -> None:
    for ours, theirs, side in ((bad, doc(entry(1)), "ours"), (doc(entry(1)), bad, "theirs")):
        with pytest.raises(MergeRefused) as caught:
            merge_feedback(b"[]", ours, theirs, CAP)
        assert caught.value.message.startswith(side) and says in caught.value.message


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(MergeRefused, match="at least 1"):
        merge_feedback(b"", b"[]", b"[]", 0)


# --- .jsonl -------------------------------------------------------------------------------------
def test_ledger_lines_merge_by_id_sorted_by_time() -> None:
    first = line(id="d-1", item="qi-1", state="approved", at="2026-04-08T10:00:00.000Z")
    ours = line(id="d-3", item="qi-3", state="rejected", at="2026-04-08T10:00:02.000Z")
    theirs = line(id="d-2", item="qi-2", state="approved", at="2026-04-08T10:00:01.000Z")
    merged = merge_jsonl(lines(first), lines(first, ours), lines(first, theirs))
    assert merged == lines(first, theirs, ours)


def test_rating_lines_merge_by_transaction_id_and_timestamp() -> None:
    late = line(transaction_id="t-2", rating=5, timestamp="2026-04-08T11:00:00Z")
    early = line(transaction_id="t-1", rating=2, timestamp="2026-04-08T09:00:00Z")
    assert merge_jsonl(b"", lines(late), lines(early, late)) == lines(early, late)


def test_memory_lines_merge_by_id_and_created_at() -> None:
    one = line(id="m-1", content="a", createdAt="2026-04-08T10:00:00.000Z")
    two = line(id="m-2", content="b", createdAt="2026-04-08T09:00:00.000Z")
    assert merge_jsonl(b"", lines(one), lines(two)) == lines(two, one)


def test_a_line_both_sides_made_on_their_own_is_kept_as_ours_has_it() -> None:
    """One price cut made on two machines: a rebased copy then changes nothing."""
    cut = "price-0123456789abcdef"  # an id derived from what the cut is
    early = line(id=cut, priceOld="20", priceNew="19", createdAt="2026-04-08T10:00:01Z")
    late = line(id=cut, priceOld="20", priceNew="19", createdAt="2026-04-08T10:00:05Z")
    assert merge_jsonl(b"", lines(late), lines(early)) == lines(late)
    assert merge_jsonl(b"", lines(early), lines(late)) == lines(early)


def test_lines_are_kept_exactly_as_written() -> None:
    spaced = '{"id":"d-1",   "at": "2026-04-08T10:00:00Z", "note": "caf\\u00e9"}'
    assert merge_jsonl(b"", lines(spaced), b"") == lines(spaced)


def test_a_line_one_side_removed_goes_unless_the_other_side_edited_it() -> None:
    one = line(id="d-1", item="qi-1", state="approved", at="2026-04-08T10:00:00Z")
    two = line(id="d-2", item="qi-2", state="approved", at="2026-04-08T10:00:01Z")
    three = line(id="d-3", item="qi-3", state="rejected", at="2026-04-08T10:00:02Z")
    base, reverted = lines(one, two), lines(two)
    assert merge_jsonl(base, lines(one, two, three), reverted) == lines(two, three)
    assert merge_jsonl(base, reverted, lines(one, two, three)) == lines(two, three)
    edited = line(id="d-1", item="qi-1", state="queued", at="2026-04-08T10:00:00Z")
    assert merge_jsonl(base, lines(edited, two), reverted) == lines(edited, two)


def test_a_line_edited_on_one_side_wins() -> None:
    before = line(id="d-1", state="approved", at="2026-04-08T10:00:00Z")
    after = line(id="d-1", state="rejected", at="2026-04-08T10:00:00Z")
    assert merge_jsonl(lines(before), lines(before), lines(after)) == lines(after)
    assert merge_jsonl(lines(before), lines(after), lines(before)) == lines(after)


def test_blank_lines_and_crlf_endings_are_tolerated() -> None:
    one = line(id="d-1", at="2026-04-08T10:00:00Z")
    assert merge_jsonl(b"", (one + "\r\n\n").encode(), b"\n") == lines(one)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (b'{"id": "d-1", \n', "not valid JSON"),
        (b"[1, 2]\n", "not a JSON object"),
        (b'{"state": "approved"}\n', "no `id` or `transaction_id`"),
        (b'{"id": 7}\n', "no `id` or `transaction_id`"),
        (b'{"id": ""}\n', "no `id` or `transaction_id`"),
        (b"\xc3\x28\n", "not UTF-8"),
    ],
)
def test_a_line_that_cannot_be_merged_is_refused(bad: bytes, says: str) -> None:
    good = lines(line(id="d-9", at="2026-04-08T10:00:00Z"))
    with pytest.raises(MergeRefused, match=says) as caught:
        merge_jsonl(b"", good, good + bad)
    assert caught.value.message.startswith("theirs")


# --- generated snippets and kinds ---------------------------------------------------------------
def test_generated_snippets_take_the_changed_side_else_the_same_one_either_way() -> None:
    assert merge_generated(b"a", b"a", b"b") == b"b"
    assert merge_generated(b"a", b"c", b"a") == b"c"
    assert merge_generated(b"a", b"b", b"c") == merge_generated(b"a", b"c", b"b")


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("_data/agents/w/feedback.json", "feedback"),
        ("_data/agents/w/decisions.jsonl", "jsonl"),
        ("_data/agents/w/ratings/s/2026-04.jsonl", "jsonl"),
        ("_data/agents/w/prompt/feedback.md", "generated"),
        ("_data/agents/w/prompt/skills/seo.md", "generated"),
        ("_data/agents/w/SOUL.md", None),
        ("_data/agents/w/prompt/notes.md", None),
        ("_data/agents/w/queue/qi-1.json", None),
        ("", None),
    ],
)
def test_kind_of_a_path(path: str, kind: str | None) -> None:
    assert kind_of(path) == kind


# --- properties ---------------------------------------------------------------------------------
# A small pool of ids makes overlaps likely; each id has one time, and versions differ in notes.
entries = st.builds(
    lambda n, notes: entry(n, notes=notes),
    st.integers(0, 30),
    st.sampled_from(["a", "b", "c"]),
)
sides = st.lists(entries, max_size=12).map(lambda found: {e["id"]: e for e in found})
caps = st.integers(1, 15)


def feedback_bytes(side: dict[str, dict[str, Any]]) -> bytes:
    return doc(*side.values())


@settings(max_examples=150, deadline=None)
@given(base=sides, ours=sides, theirs=sides, cap=caps)
def test_feedback_merge_is_commutative(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], cap: int
) -> None:
    b, o, t = feedback_bytes(base), feedback_bytes(ours), feedback_bytes(theirs)
    assert merge_feedback(b, o, t, cap) == merge_feedback(b, t, o, cap)


@settings(max_examples=150, deadline=None)
@given(base=sides, ours=sides, theirs=sides, cap=caps)
def test_feedback_merge_is_idempotent(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], cap: int
) -> None:
    b, o = feedback_bytes(base), feedback_bytes(ours)
    alone = merge_feedback(b, o, o, cap)
    assert merge_feedback(b, alone, alone, cap) == alone
    merged = merge_feedback(b, o, feedback_bytes(theirs), cap)
    assert merge_feedback(b, merged, merged, cap) == merged
    assert merge_feedback(merged, merged, merged, cap) == merged


def three_way_keys(base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> set[str]:
    """What a three-way merge keeps: every key of either side, but those one side removed
    while the other left them as the ancestor had them."""
    kept = set()
    for key in {*ours, *theirs}:
        sides = [side[key] for side in (ours, theirs) if key in side]
        if key in base and len(sides) == 1 and sides[0] == base[key]:
            continue  # removed by one side, unchanged on the other
        kept.add(key)
    return kept


@settings(max_examples=150, deadline=None)
@given(base=sides, ours=sides, theirs=sides, cap=caps)
def test_feedback_merge_keeps_the_newest_cap_of_the_three_way_merge_and_respects_the_cap(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], cap: int
) -> None:
    merged = merge_feedback(feedback_bytes(base), feedback_bytes(ours), feedback_bytes(theirs), cap)
    union = {**ours, **theirs}
    kept = three_way_keys(base, ours, theirs)
    newest = sorted(kept, key=lambda key: (union[key]["createdAt"], key))[-cap:]
    assert ids(merged) == newest
    assert len(ids(merged)) <= cap
    for value in json.loads(merged):  # each kept entry is one side's version of it
        assert value in (ours.get(value["id"]), theirs.get(value["id"]))


ledger_lines = st.builds(
    lambda n, state: line(id=f"d-{n}", item=f"qi-{n}", state=state, at=entry(n)["createdAt"]),
    st.integers(0, 30),
    st.sampled_from(["approved", "rejected", "queued"]),
)
ledgers = st.lists(ledger_lines, max_size=12).map(
    lambda found: {json.loads(x)["id"]: x for x in found}
)


@settings(max_examples=150, deadline=None)
@given(base=ledgers, ours=ledgers, theirs=ledgers)
def test_jsonl_merge_is_commutative_idempotent_and_keeps_what_a_three_way_merge_keeps(
    base: dict[str, str], ours: dict[str, str], theirs: dict[str, str]
) -> None:
    b, o, t = lines(*base.values()), lines(*ours.values()), lines(*theirs.values())
    merged = merge_jsonl(b, o, t)
    assert merged == merge_jsonl(b, t, o)
    assert merge_jsonl(b, merged, merged) == merged
    kept = [json.loads(x) for x in merged.decode().splitlines()]
    assert sorted(value["id"] for value in kept) == sorted(three_way_keys(base, ours, theirs))
    assert [value["at"] for value in kept] == sorted(value["at"] for value in kept)
    for value in kept:
        assert json.dumps(value) in (ours.get(value["id"]), theirs.get(value["id"]))


# --- the command --------------------------------------------------------------------------------
def versions(tmp_path: Path, base: bytes, ours: bytes, theirs: bytes) -> tuple[Path, Path, Path]:
    paths = (tmp_path / "O", tmp_path / "A", tmp_path / "B")
    for path, data in zip(paths, (base, ours, theirs), strict=True):
        path.write_bytes(data)
    return paths


def driver(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`feedbackd merge-driver ARGS`, as git runs it for a merged file (here, in this process)."""
    return run_cli(["merge-driver", *map(str, args)], cwd=cwd)


def test_the_command_writes_the_merge_into_ours(tmp_path: Path) -> None:
    base, ours, theirs = versions(tmp_path, doc(), doc(entry(2)), doc(entry(1)))
    done = driver(base, ours, theirs, "_data/agents/w/feedback.json", "--cap", "5")
    assert done.returncode == 0, done.stderr
    assert ids(ours.read_bytes()) == ["fb-0001", "fb-0002"]
    assert theirs.read_bytes() == doc(entry(1))


def test_the_command_reads_the_cap_from_the_workspace_config(tmp_path: Path) -> None:
    (tmp_path / "feedbackd.yaml").write_text("feedback:\n  max_entries: 2\n")
    base, ours, theirs = versions(tmp_path, b"", doc(entry(1), entry(3)), doc(entry(2)))
    done = driver(base, ours, theirs, "x/feedback.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ids(ours.read_bytes()) == ["fb-0002", "fb-0003"]


def test_a_broken_config_falls_back_to_the_default_cap_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "feedbackd.yaml").write_text("feedback:\n  max_entrys: 2\n")
    base, ours, theirs = versions(tmp_path, b"", doc(entry(1)), doc(entry(2)))
    done = driver(base, ours, theirs, "x/feedback.json", cwd=tmp_path)
    assert done.returncode == 0
    assert "default cap of 200" in done.stderr and ids(ours.read_bytes()) == ["fb-0001", "fb-0002"]


@pytest.mark.parametrize(
    ("config", "cap"),
    [
        ("", 200),
        ("# feedback:\n#   max_entries: 5\n", 200),
        ("feedback:\n  max_entries: 7\n", 7),
        ("feedback:\n", 200),
        ("feedback: {max_entries: 100000}\n", 100000),
        ("git:\n  enabled: false\nfeedback:\n  max_entries: 3\n", 3),
        # What only the full settings can judge: they accept it, or explain what is wrong.
        ('feedback:\n  max_entries: "3"\n', None),
        ("feedback:\n  max_entries: 2.0\n", None),
        ("feedback:\n  max_entries: 0\n", None),
        ("feedback:\n  max_entries: 100001\n", None),
        ("feedback:\n  max_entries: true\n", None),
        ("feedback:\n  max_entrys: 2\n", None),
        ("feedback: 5\n", None),
        ("feedback:\n  max_entries: [\n", None),
        ("defaults: &d\n  max_entries: 3\nfeedback: *d\n", None),
        ("- feedback\n", None),
    ],
)
def test_the_quick_reading_of_the_cap(config: str, cap: int | None) -> None:
    """The cap as written, where the full settings would read the same; else None."""
    assert written_max_entries(config) == cap
    if cap is not None:
        assert parse_settings(config, "feedbackd.yaml").feedback.max_entries == cap


def test_the_full_settings_decide_what_the_quick_reading_cannot(tmp_path: Path) -> None:
    (tmp_path / "feedbackd.yaml").write_text('feedback:\n  max_entries: "2"\n')
    base, ours, theirs = versions(tmp_path, b"", doc(entry(1), entry(3)), doc(entry(2)))
    done = driver(base, ours, theirs, "x/feedback.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ids(ours.read_bytes()) == ["fb-0002", "fb-0003"] and done.stderr == ""


def test_a_missing_config_named_by_the_environment_means_the_default_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEEDBACKD_CONFIG", str(tmp_path / "gone.yaml"))
    base, ours, theirs = versions(tmp_path, b"", doc(entry(1)), doc(entry(2)))
    done = driver(base, ours, theirs, "a/feedback.json")
    assert done.returncode == 0 and "default cap of 200" in done.stderr
    assert ids(ours.read_bytes()) == ["fb-0001", "fb-0002"]


def test_the_driver_merges_without_importing_pydantic(tmp_path: Path) -> None:
    """git starts the driver once per merged file: the settings model stays out of it."""
    (tmp_path / "feedbackd.yaml").write_text("feedback:\n  max_entries: 2\n")
    legacy = json.dumps([{"original": "a", "corrected": "b"}]).encode()
    files = versions(tmp_path, b"", legacy, doc(entry(1)))
    script = (
        "import sys; from feedbackd.launch import main; "
        "code = main(sys.argv[1:]); "
        "assert not [m for m in sys.modules if m.startswith(('pydantic', 'typer'))], 'imported'; "
        "sys.exit(code)"
    )
    argv = [sys.executable, "-c", script, "merge-driver", *map(str, files), "a/feedback.json"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [value["type"] for value in json.loads(files[1].read_bytes())] == ["correction"] * 2


@pytest.mark.parametrize(
    ("path", "ours", "says"),
    [
        ("a/feedback.json", b"[{", "ours: feedback.json is not valid JSON"),
        ("a/decisions.jsonl", b"oops\n", "ours line 1: not valid JSON"),
        ("a/SOUL.md", b"# Soul\n", "no feedbackd merge for this kind of file"),
    ],
)
def test_the_command_refuses_what_it_cannot_merge_and_leaves_ours(
    tmp_path: Path, path: str, ours: bytes, says: str
) -> None:
    base_file, ours_file, theirs_file = versions(tmp_path, b"", ours, b"")
    done = driver(base_file, ours_file, theirs_file, path)
    assert done.returncode == 1
    assert says in done.stderr and path in done.stderr
    assert ours_file.read_bytes() == ours


def test_the_light_entry_point_refuses_bad_usage_and_missing_files(tmp_path: Path) -> None:
    assert main(["only-one"]) == 2
    assert main(["--cap", "x", "a", "b", "c"]) == 2
    assert main(["--cap", "0", "a", "b", "c"]) == 2
    missing = tmp_path / "missing"
    assert main([str(missing), str(missing), str(missing), "a/feedback.json"]) == 1


def test_without_a_path_the_kind_comes_from_the_file_name(tmp_path: Path) -> None:
    ours = tmp_path / "decisions.jsonl"
    ours.write_bytes(lines(line(id="d-2", at="2026-04-08T10:00:01Z")))
    other = tmp_path / "other.jsonl"
    other.write_bytes(lines(line(id="d-1", at="2026-04-08T10:00:00Z")))
    base = tmp_path / "base.jsonl"
    base.write_bytes(b"")
    assert main([str(base), str(ours), str(other)]) == 0
    assert [json.loads(x)["id"] for x in ours.read_text().splitlines()] == ["d-1", "d-2"]


# --- with git -----------------------------------------------------------------------------------
def test_git_merges_feedback_of_two_branches_with_the_registered_driver(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    init_workspace(root)
    agent = root / "_data" / "agents" / "w"
    agent.mkdir(parents=True)
    (agent / "feedback.json").write_bytes(doc(entry(1)))
    (agent / "decisions.jsonl").write_bytes(lines(line(id="d-1", at="2026-04-08T10:00:00Z")))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "switch", "-qc", "other")
    (agent / "feedback.json").write_bytes(doc(entry(1), entry(2)))
    with open(agent / "decisions.jsonl", "a") as handle:
        handle.write(line(id="d-2", at="2026-04-08T10:00:02Z") + "\n")
    git(root, "commit", "-qam", "other")
    git(root, "switch", "-q", "main")
    (agent / "feedback.json").write_bytes(doc(entry(1), entry(3)))
    with open(agent / "decisions.jsonl", "a") as handle:
        handle.write(line(id="d-3", at="2026-04-08T10:00:01Z") + "\n")
    git(root, "commit", "-qam", "main")
    git(root, "merge", "-q", "--no-edit", "other")
    assert ids((agent / "feedback.json").read_bytes()) == ["fb-0001", "fb-0002", "fb-0003"]
    ledger = [json.loads(x)["id"] for x in (agent / "decisions.jsonl").read_text().splitlines()]
    assert ledger == ["d-1", "d-3", "d-2"]
    assert git(root, "status", "--porcelain") == ""


def test_git_merges_with_the_cap_of_the_workspace_config(tmp_path: Path) -> None:
    """git runs the driver in the workspace's top folder: its feedbackd.yaml sets the cap."""
    root = tmp_path / "ws"
    init_workspace(root)
    with open(root / "feedbackd.yaml", "a") as config:
        config.write("feedback:\n  max_entries: 3\n")
    agent = root / "_data" / "agents" / "w"
    agent.mkdir(parents=True)
    legacy = {"original": "Old title", "corrected": "New title"}
    (agent / "feedback.json").write_text(json.dumps([legacy, entry(1)]))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    git(root, "switch", "-qc", "other")
    (agent / "feedback.json").write_text(json.dumps([legacy, entry(1), entry(2), entry(4)]))
    git(root, "commit", "-qam", "other")
    git(root, "switch", "-q", "main")
    (agent / "feedback.json").write_text(json.dumps([legacy, entry(1), entry(3)]))
    git(root, "commit", "-qam", "main")
    (agent.parent / "sub").mkdir()
    git(agent.parent / "sub", "merge", "-q", "--no-edit", "other")  # from a subfolder, too
    assert ids((agent / "feedback.json").read_bytes()) == ["fb-0002", "fb-0003", "fb-0004"]
    assert git(root, "status", "--porcelain") == ""

"""The rating store: month files as the truth, and an index that follows every change to them."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from feedbackd.core.config import ReputationSettings
from feedbackd.core.errors import AlreadySubmitted
from feedbackd.core.ratings.records import Rating, parse_rating, rating_line
from feedbackd.core.ratings.reputation import reputation_report
from feedbackd.core.ratings.storedratings import StoredRating, as_stored
from feedbackd.core.timeutil import iso_ms
from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges import monthfiles
from feedbackd.edges.ratingcache import RatingCache
from feedbackd.edges.ratingstore import INDEX_NAME, RatingStore
from tests.bench import bench_ratings
from tests.conftest import git

NOW = datetime(2026, 4, 8, 12, 0, tzinfo=UTC)
PROVIDER = "heavylift-chengwen"
SETTINGS = ReputationSettings()


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.agents_dir.mkdir(parents=True)
    return ws


def make(
    when: datetime = NOW,
    stars: int = 4,
    skill: str = "claude-code-run",
    provider: str = PROVIDER,
    **extra: Any,
) -> Rating:
    fields = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": provider,
        "skill_id": skill,
        "rating": stars,
        "result_quality": "good",
        "would_reuse": stars >= 3,
        "cost_value_ratio": "fair",
        "timestamp": iso_ms(when),
        **extra,
    }
    return parse_rating(fields, requester="buyer-1", now=NOW)


def stored(*ratings: Rating) -> list[StoredRating]:
    """The ratings as the store reads them back."""
    return [as_stored(rating) for rating in ratings]


def touch_later(path: Path) -> None:
    """Give an edited file a new mtime, as an editor's save would (same-second edits included)."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_append_writes_one_line_to_the_month_file_of_the_rating(workspace: Workspace) -> None:
    store = RatingStore(workspace)
    april, march = make(NOW), make(NOW - timedelta(days=30))
    first = store.append(april)
    second = store.append(march)
    base = workspace.agents_dir / PROVIDER / "ratings" / "claude-code-run"
    assert first == base / "2026-04.jsonl" and second == base / "2026-03.jsonl"
    assert first.read_text() == rating_line(april) + "\n"
    assert store.path_for(march) == second
    assert store.skills(PROVIDER) == ["claude-code-run"]


def test_a_second_rating_of_a_transaction_is_refused(workspace: Workspace) -> None:
    store = RatingStore(workspace)
    rating = make()
    path = store.append(rating)
    again = make(NOW + timedelta(days=40), provider="other-provider").model_copy(
        update={"transaction_id": rating.transaction_id}
    )
    with pytest.raises(AlreadySubmitted) as caught:
        store.append(again)
    assert caught.value.code == "feedback_already_submitted"
    assert workspace.relative(path) in caught.value.message
    assert path.read_text().count("\n") == 1
    assert not (workspace.agents_dir / "other-provider").exists()


def test_has_transaction(workspace: Workspace) -> None:
    store = RatingStore(workspace)
    rating = make()
    assert not store.has_transaction(rating.transaction_id)
    store.append(rating)
    assert store.has_transaction(rating.transaction_id)
    assert store.has_transaction(rating.transaction_id.upper())
    assert not store.has_transaction(str(uuid.uuid4()))
    assert not store.has_transaction("not-a-uuid")
    assert (workspace.state_dir / INDEX_NAME).is_file()


def test_ratings_are_listed_newest_first_by_skill(workspace: Workspace) -> None:
    store = RatingStore(workspace)
    made = [make(NOW - timedelta(days=d), skill=s) for d, s in [(40, "a"), (1, "b"), (3, "a")]]
    for rating in made:
        store.append(rating)
    assert store.ratings(PROVIDER) == stored(made[1], made[2], made[0])
    assert store.ratings(PROVIDER, "a") == stored(made[2], made[0])
    assert store.ratings(PROVIDER, "missing") == []
    assert store.ratings("never-seen") == []
    assert store.skills(PROVIDER) == ["a", "b"]


def test_since_opens_only_the_months_that_can_hold_the_window(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    store = RatingStore(workspace)
    since = datetime(2026, 4, 1, 0, 0, tzinfo=UTC)
    at_start, inside = make(since), make(since + timedelta(days=5))
    just_before = make(since - timedelta(milliseconds=1))
    for rating in (at_start, inside, just_before, make(since - timedelta(days=60))):
        store.append(rating)
    old_month = store.path_for(just_before).with_name("2026-01.jsonl")
    old_month.write_text("this line would be reported if the file were read\n")
    with caplog.at_level(logging.WARNING):
        assert store.ratings(PROVIDER, since=since) == stored(inside, at_start)
    assert caplog.records == []
    assert store.ratings(PROVIDER, since=since - timedelta(days=1)) == stored(
        inside, at_start, just_before
    )


def test_since_keeps_hand_written_timestamps_that_sort_differently(workspace: Workspace) -> None:
    store = RatingStore(workspace)
    rating = make(NOW)
    line = rating_line(rating).replace(iso_ms(NOW), "2026-04-08T14:00:00+02:00")
    path = store.path_for(rating)
    path.parent.mkdir(parents=True)
    path.write_text(line + "\n")
    assert store.ratings(PROVIDER, since=NOW - timedelta(minutes=1)) == stored(rating)
    assert store.ratings(PROVIDER, since=NOW + timedelta(minutes=1)) == []


def test_bad_lines_are_skipped_with_a_warning_naming_file_and_line(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    store = RatingStore(workspace)
    good = make()
    path = store.append(good)
    other_skill = make(skill="elsewhere")
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"transaction_id": "half-writ\n\n[1, 2]\n')
        handle.write(rating_line(good).replace('"rating": 4', '"rating": 9') + "\n")
        handle.write(rating_line(other_skill) + "\n")
    with path.open("ab") as handle:
        handle.write(b'{"rating": "\xff"}\n')
    where = workspace.relative(path)
    with caplog.at_level(logging.WARNING):
        assert store.ratings(PROVIDER) == stored(good)
        assert store.has_transaction(good.transaction_id)
        assert not store.has_transaction(other_skill.transaction_id)
    messages = [record.getMessage() for record in caplog.records]
    for number in (2, 4, 5, 6, 7):
        assert any(m.startswith(f"{where}, line {number}: skipped: ") for m in messages), number
    assert any("rating: 9 is not allowed" in m for m in messages)
    assert any("for another skill" in m for m in messages)


def test_the_same_transaction_twice_in_a_file_counts_once(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    store = RatingStore(workspace)
    rating = make()
    path = store.append(rating)
    with path.open("a") as handle:
        handle.write(rating_line(rating) + "\n")
    with caplog.at_level(logging.WARNING):
        report = store.reputation_report(PROVIDER, SETTINGS, NOW)
    assert report["feedback_count"] == 1
    assert "line 2: skipped: transaction rated twice" in caplog.text
    assert store.ratings(PROVIDER) == stored(rating)


def test_store_reputation_equals_the_formula_over_all_ratings(workspace: Workspace) -> None:
    store = RatingStore(workspace)
    made = [
        make(NOW - timedelta(days=d), stars=s, skill=k, result_quality=q, cost_value_ratio=c)
        for d, s, k, q, c in [
            (0.5, 5, "a", "excellent", "great"), (12, 2, "a", "poor", "overpriced"),
            (45, 4, "b", "good", "fair"), (400, 1, "b", "failed", "overpriced"),
            (-3, 3, "a", "acceptable", "fair"),  # a clock ahead of ours: counts as age 0
        ]
    ]  # fmt: skip
    for rating in made:
        store.append(rating)
    for later in (NOW, NOW + timedelta(days=20)):
        expected = reputation_report(PROVIDER, made, SETTINGS, later)
        assert _close(store.reputation_report(PROVIDER, SETTINGS, later), expected)
    only_b = reputation_report(PROVIDER, [r for r in made if r.skill_id == "b"], SETTINGS, NOW)
    assert _close(store.reputation_report(PROVIDER, SETTINGS, NOW, skill="b"), only_b)
    slow = ReputationSettings(decay_days=90)
    assert _close(
        store.reputation_report(PROVIDER, slow, NOW), reputation_report(PROVIDER, made, slow, NOW)
    )


def test_reputation_of_an_unknown_provider_is_the_cold_start(workspace: Workspace) -> None:
    report = RatingStore(workspace).reputation_report("nobody", SETTINGS, NOW)
    assert report["reputation_score"] == 0.5 and report["feedback_count"] == 0


def test_index_follows_a_hand_edit_behind_the_stores_back(workspace: Workspace) -> None:
    store = RatingStore(workspace)
    kept, edited = make(stars=5), make(stars=4)
    store.append(kept)
    path = store.append(edited)
    before = store.reputation_report(PROVIDER, SETTINGS, NOW)
    assert before["feedback_count"] == 2
    text = path.read_text().replace('"rating": 4', '"rating": 1')  # same size
    path.write_text(text)
    touch_later(path)
    after = store.reputation_report(PROVIDER, SETTINGS, NOW)
    changed = [kept, edited.model_copy(update={"rating": 1})]
    assert _close(after, reputation_report(PROVIDER, changed, SETTINGS, NOW))
    path.write_text(rating_line(kept) + "\n")  # a line removed
    assert not store.has_transaction(edited.transaction_id)
    assert store.reputation_report(PROVIDER, SETTINGS, NOW)["feedback_count"] == 1
    path.unlink()
    assert not store.has_transaction(kept.transaction_id)
    assert store.reputation_report(PROVIDER, SETTINGS, NOW)["feedback_count"] == 0


def test_lines_appended_by_someone_else_are_read_incrementally(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    store = RatingStore(workspace)
    first = make(NOW - timedelta(days=2))
    path = store.append(first)
    with path.open("a") as handle:
        handle.write("a bad line, reported once\n")
    with caplog.at_level(logging.WARNING):
        assert store.has_transaction(first.transaction_id)
    assert "line 2: skipped" in caplog.text
    caplog.clear()
    pulled = [make(NOW - timedelta(hours=h)) for h in (5, 1)]
    with path.open("a") as handle:
        handle.writelines(rating_line(r) + "\n" for r in pulled)
    with caplog.at_level(logging.WARNING):
        assert all(store.has_transaction(r.transaction_id) for r in pulled)
    assert caplog.text == ""  # only the new lines were read
    expected = reputation_report(PROVIDER, [first, *pulled], SETTINGS, NOW)
    assert _close(store.reputation_report(PROVIDER, SETTINGS, NOW), expected)


def test_after_a_rebuild_only_the_newest_months_are_read_by_their_appended_lines(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    store = RatingStore(workspace)
    months = [make(NOW - timedelta(days=31 * back)) for back in (3, 1, 0)]
    for rating in months:
        path = store.append(rating)
        with path.open("a") as handle:
            handle.write("a bad line\n")
    store.index_path.unlink()  # a fresh clone
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert all(store.has_transaction(r.transaction_id) for r in months)
        late = [make(NOW - timedelta(days=31 * back, hours=1)) for back in (3, 1, 0)]
        for rating in late:
            store.append(rating)
        assert all(store.has_transaction(r.transaction_id) for r in late)
    assert store.reputation_report(PROVIDER, SETTINGS, NOW)["feedback_count"] == 6
    warned = [record.getMessage().split(",")[0] for record in caplog.records]
    old, *newest = (workspace.relative(store.path_for(r)) for r in months)
    assert warned.count(str(old)) == 2  # read whole again for its late rating
    assert [warned.count(str(path)) for path in newest] == [1, 1]


def test_a_file_without_final_newline_is_read_whole_after_it_grows(workspace: Workspace) -> None:
    store = RatingStore(workspace)
    first, second = make(), make()
    path = store.path_for(first)
    path.parent.mkdir(parents=True)
    path.write_text(rating_line(first))  # a hand-written file without the last newline
    assert store.has_transaction(first.transaction_id)
    store.append(second)  # append_line ends the cut line first
    assert store.has_transaction(second.transaction_id)
    assert store.reputation_report(PROVIDER, SETTINGS, NOW)["feedback_count"] == 2


def test_the_index_reads_whole_a_file_rewritten_longer(workspace: Workspace) -> None:
    store = RatingStore(workspace)
    kept, replaced = make(stars=5), make(stars=4)
    path = store.append(kept)
    store.append(replaced)
    assert store.has_transaction(replaced.transaction_id)
    pulled = [make(stars=1), make(stars=2)]  # a pull: one line replaced, one more line
    path.write_text("".join(rating_line(r) + "\n" for r in [kept, *pulled]))
    assert not store.has_transaction(replaced.transaction_id)
    assert all(store.has_transaction(r.transaction_id) for r in pulled)
    expected = reputation_report(PROVIDER, [kept, *pulled], SETTINGS, NOW)
    assert _close(store.reputation_report(PROVIDER, SETTINGS, NOW), expected)


def test_a_kept_window_reads_only_what_was_appended(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    store = RatingStore(workspace, cache=RatingCache())
    first = make(NOW - timedelta(days=2))
    path = store.path_for(first)
    path.parent.mkdir(parents=True)
    path.write_text(rating_line(first) + "\na bad line, reported once\n")
    with caplog.at_level(logging.WARNING):
        assert store.ratings(PROVIDER) == stored(first)
    assert f"{workspace.relative(path)}, line 2: skipped" in caplog.text
    caplog.clear()
    later = [make(NOW - timedelta(hours=5)), make(NOW - timedelta(hours=1), requester_agent="b2")]
    with path.open("a") as handle:  # another process appends
        handle.write("\n".join(rating_line(r) for r in later) + "\n{bad\n")
    with caplog.at_level(logging.WARNING):
        assert store.ratings(PROVIDER) == stored(later[1], later[0], first)
        assert store.ratings(PROVIDER, requester="b2") == stored(later[1])
        assert store.ratings(PROVIDER, since=NOW - timedelta(days=1)) == stored(later[1], later[0])
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 1  # only the new lines were read, and numbered as the file numbers them
    assert messages[0].startswith(f"{workspace.relative(path)}, line 5: skipped: not valid JSON")


def test_a_kept_window_follows_rewrites_of_its_files(workspace: Workspace) -> None:
    store = RatingStore(workspace, cache=RatingCache())
    older, newer = make(NOW - timedelta(hours=2), stars=4), make(NOW - timedelta(hours=1))
    path = store.append(older)
    store.append(newer)
    assert store.ratings(PROVIDER) == stored(newer, older)
    changed, pulled = older.model_copy(update={"rating": 1}), make(NOW)
    path.write_text("".join(rating_line(r) + "\n" for r in [changed, newer, pulled]))
    assert store.ratings(PROVIDER) == stored(pulled, newer, changed)  # first part changed, longer
    again = older.model_copy(update={"rating": 2})
    path.write_text(path.read_text().replace('"rating": 1', '"rating": 2'))
    touch_later(path)
    assert store.ratings(PROVIDER) == stored(pulled, newer, again)  # same size
    path.write_text(rating_line(pulled) + "\n")
    assert store.ratings(PROVIDER) == stored(pulled)  # shorter
    path.unlink()
    assert store.ratings(PROVIDER) == []


def test_a_kept_window_drops_the_files_used_longest_ago(workspace: Workspace) -> None:
    store = RatingStore(workspace, cache=RatingCache(max_rows=2))
    made = [make(NOW - timedelta(days=40 * n, hours=1), skill=f"s{n}") for n in range(3)]
    for rating in made:
        store.append(rating)
        assert store.ratings(PROVIDER, rating.skill_id) == stored(rating)
    extra = make(NOW, skill="s0")
    with store.path_for(extra).open("a") as handle:
        handle.write(rating_line(extra) + "\n")
    assert store.ratings(PROVIDER, "s0") == stored(extra, made[0])
    assert store.ratings(PROVIDER) == stored(extra, *made)


def test_a_damaged_index_is_rebuilt(workspace: Workspace, caplog: pytest.LogCaptureFixture) -> None:
    store = RatingStore(workspace)
    rating = make()
    store.append(rating)
    assert store.has_transaction(rating.transaction_id)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.index_path}{suffix}").unlink(missing_ok=True)
    store.index_path.write_bytes(b"this is not a database" * 100)
    with caplog.at_level(logging.WARNING):
        assert store.has_transaction(rating.transaction_id)
    assert "rebuilding it from the rating files" in caplog.text


def test_files_that_are_not_month_files_are_ignored(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    store = RatingStore(workspace)
    rating = make()
    path = store.append(rating)
    stray = path.with_name("2026-13.jsonl")
    stray.write_text(rating_line(make()) + "\n")
    path.with_name("notes.txt").write_text("not ratings\n")
    (path.parent.parent / "bad skill").mkdir()
    with caplog.at_level(logging.WARNING):
        assert store.ratings(PROVIDER) == stored(rating)
    assert f"{stray}: not a YYYY-MM.jsonl month file; ignored" in caplog.text
    assert "notes.txt" not in caplog.text


def test_symlinks_leading_outside_the_workspace_are_ignored(
    workspace: Workspace, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "2026-04.jsonl").write_text(rating_line(make()) + "\n")
    skill_dir = workspace.agents_dir / PROVIDER / "ratings" / "claude-code-run"
    skill_dir.mkdir(parents=True)
    (skill_dir / "2026-04.jsonl").symlink_to(outside / "2026-04.jsonl")
    (skill_dir.parent / "linked").symlink_to(outside, target_is_directory=True)
    with caplog.at_level(logging.WARNING):
        assert RatingStore(workspace).ratings(PROVIDER) == []
    assert caplog.text.count("leads outside the workspace") == 2


def test_index_building_reports_progress(workspace: Workspace) -> None:
    seen: list[tuple[int, int]] = []
    store = RatingStore(workspace, progress=lambda done, total: seen.append((done, total)))
    for days in (0, 40, 80):
        store.append(make(NOW - timedelta(days=days)))
    seen.clear()
    store.index_path.unlink()
    assert store.reputation_report(PROVIDER, SETTINGS, NOW)["feedback_count"] == 3
    assert len(seen) == 3 and seen[-1][0] == seen[-1][1] > 0


def test_a_rating_pulled_from_another_clone_is_seen(git_repo: Path, tmp_path: Path) -> None:
    git(git_repo, "config", "receive.denyCurrentBranch", "updateInstead")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(git_repo), str(clone))
    here, there = RatingStore(Workspace(git_repo)), RatingStore(Workspace(clone))
    local = make(NOW - timedelta(days=10))  # another month file: no text conflict
    path = here.append(local)
    git(git_repo, "add", "-A", "_data")
    git(git_repo, "commit", "-q", "-m", "rating")
    remote = make(NOW)
    assert not there.has_transaction(local.transaction_id)
    there.append(remote)
    git(clone, "add", "-A", "_data")
    git(clone, "commit", "-q", "-m", "rating elsewhere")
    git(clone, "pull", "-q", "--no-rebase", "--no-edit")
    assert there.has_transaction(local.transaction_id)
    assert there.has_transaction(remote.transaction_id)
    assert there.reputation_report(PROVIDER, SETTINGS, NOW)["feedback_count"] == 2
    assert (clone / workspace_relative(path, git_repo)).is_file()


def test_the_benchmark_runs_on_a_small_history(tmp_path: Path) -> None:
    lines = list(bench_ratings.run(tmp_path / "bench", count=300, repeat=1, baseline_repeat=1))
    assert lines[0].startswith("generated 300 ratings")
    assert len(lines) == 7 and all(line.endswith("x") for line in lines[2:])
    month_files = list((tmp_path / "bench" / "_data").glob("agents/*/ratings/*/*.jsonl"))
    assert month_files and all(
        json.loads(line)["timestamp"][:7] == f.stem
        for f in month_files
        for line in f.read_text().splitlines()
    )


def workspace_relative(path: Path, root: Path) -> Path:
    return path.relative_to(root)


def _close(actual: Any, expected: Any) -> bool:
    """Reports agree, scores and confidence to the 4 decimals they are shown with."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), (actual, expected)
        return all(_close(actual[key], expected[key]) for key in expected)
    if isinstance(expected, float):
        assert actual == pytest.approx(expected, abs=2e-4)
        return True
    assert actual == expected
    return True


def _index_rows(store: RatingStore) -> dict[tuple[str, str, str], tuple[Any, ...]]:
    with sqlite3.connect(store.index_path) as db:
        rows = db.execute("SELECT provider, skill, month, size, digest, keys, tally FROM files")
        return {tuple(row[:3]): (row[3], row[4], row[5], json.loads(row[6])) for row in rows}


def _build_incrementally(workspace: Workspace, store: RatingStore, count: int) -> list[str]:
    """The history written in ten pulls, the index brought up to date after each."""
    scratch = Workspace(workspace.root.parent / "scratch")
    bench_ratings.generate(scratch, count)
    lines = [
        (path.relative_to(scratch.root), line)
        for path in sorted(scratch.agents_dir.glob("*/ratings/*/*.jsonl"))
        for line in path.read_text().splitlines(keepends=True)
    ]
    for batch in range(10):
        for relative, line in lines[batch::10]:
            target = workspace.root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a", encoding="utf-8") as handle:
                handle.write(line)
        store.reputation_report(bench_ratings.PROVIDER, SETTINGS, NOW)
    return [json.loads(line)["transaction_id"] for _, line in lines]


def test_a_rebuild_equals_the_index_built_incrementally(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RatingStore(workspace)
    ids = _build_incrementally(workspace, store, 1200)
    store.append(make(NOW - timedelta(hours=1), provider=bench_ratings.PROVIDER))
    report = store.reputation_report(bench_ratings.PROVIDER, SETTINGS, NOW)
    incremental = _index_rows(store)
    assert report["feedback_count"] == 1201
    for in_workers in (False, True):
        if in_workers:  # the worker processes, as a big rebuild runs them
            monkeypatch.setattr(monthfiles, "PARALLEL_MIN_BYTES", 0)
            monkeypatch.setattr(monthfiles, "_cores", lambda: 2)
        store.index_path.unlink()
        assert _close(store.reputation_report(bench_ratings.PROVIDER, SETTINGS, NOW), report)
        rebuilt = _index_rows(store)
        assert rebuilt.keys() == incremental.keys()
        for key, (size, digest, keys, tally) in rebuilt.items():
            assert (size, keys) == (incremental[key][0], incremental[key][2])
            # Which files a rebuild fingerprints depends on which months are newest now.
            assert digest in (None, incremental[key][1])
            earlier = incremental[key][3]
            assert tally.keys() == earlier.keys()
            for field, value in tally.items():
                expected = earlier[field]
                close = value == expected if isinstance(expected, str) else None
                assert close or value == pytest.approx(expected, rel=1e-9), (key, field)
        assert all(store.has_transaction(tx) for tx in ids[::97])


def test_bad_files_are_reported_the_same_when_workers_read_them(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(monthfiles, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(monthfiles, "_cores", lambda: 2)
    store = RatingStore(workspace)
    good, hand_written = make(), make(NOW - timedelta(days=40))
    path = store.append(good)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("not json\n" + rating_line(good) + "\n")
    other = store.path_for(hand_written)
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_text(json.dumps(hand_written.model_dump(exclude_none=True), indent=None) + "\n")
    store.index_path.unlink(missing_ok=True)
    with caplog.at_level(logging.WARNING):
        assert store.reputation_report(PROVIDER, SETTINGS, NOW)["feedback_count"] == 2
    where = workspace.relative(path)
    assert f"{where}, line 2: skipped" in caplog.text
    assert f"{where}, line 3: skipped: transaction rated twice" in caplog.text


def test_when_workers_fail_the_files_are_read_here(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RatingStore(workspace)
    made = [make(NOW - timedelta(days=days)) for days in (0, 40, 80)]
    for rating in made:
        store.append(rating)
    store.index_path.unlink()
    monkeypatch.setattr(monthfiles, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(monthfiles, "_cores", lambda: 2)
    monkeypatch.setattr(monthfiles, "_WORKER", "import sys; sys.exit(3)")
    expected = reputation_report(PROVIDER, made, SETTINGS, NOW)
    assert _close(store.reputation_report(PROVIDER, SETTINGS, NOW), expected)

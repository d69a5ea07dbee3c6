"""Ledger lines written but never committed: found against HEAD, committed once, in real git."""

from __future__ import annotations

import json
import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from feedbackd.app.commits.ledgers import (
    COMMITTED_FILE,
    CommittedLedgers,
    appended_since_head,
    commit_uncommitted,
    not_in_head,
)
from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.commits.recording import CommitRequest
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.edges.files import file_state
from feedbackd.edges.git.repo import GitRepo
from tests.git_kit import counting_git
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


@pytest.fixture
def repo(site: Site) -> Iterator[GitRepo]:
    with open_repo(site.runtime()) as opened:
        assert opened is not None
        yield opened


def line(record_id: str) -> str:
    return json.dumps({"id": record_id, "at": "2026-04-08T10:00:00.000Z"}) + "\n"


def committed_log(site: Site, lines: str, name: str = "ledger.jsonl") -> Path:
    path = site.agent("w") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(lines)
    site.git("add", str(path))
    site.git("commit", "-qm", "ledger")
    return path


def ids(text: str) -> list[str]:
    return [json.loads(one)["id"] for one in text.splitlines() if one.strip()]


def test_records_whose_id_head_lacks_are_found_in_file_order(site: Site, repo: GitRepo) -> None:
    path = committed_log(site, line("d-1") + line("d-2"))
    # A merge may have reordered the lines: only ids count, not positions.
    records = ["d-3", "d-2", "d-4", "d-1"]
    found = not_in_head(repo, site.runtime().workspace, path, records, head_ids=ids, id_of=str)
    assert found == ["d-3", "d-4"]


def test_a_ledger_head_lacks_entirely_is_all_uncommitted(site: Site, repo: GitRepo) -> None:
    path = site.agent("w") / "new.jsonl"
    workspace = site.runtime().workspace
    assert not_in_head(repo, workspace, path, ["d-1"], head_ids=ids, id_of=str) == ["d-1"]


def test_only_lines_appended_to_head_count(site: Site, repo: GitRepo) -> None:
    workspace = site.runtime().workspace
    path = committed_log(site, line("r-1"))
    assert appended_since_head(repo, workspace, path) == []
    with open(path, "a") as handle:
        handle.write(line("r-2"))
    assert appended_since_head(repo, workspace, path) == [line("r-2").strip()]
    with open(path, "a") as handle:
        handle.write('{"id": "r-3"')  # still being written
    assert appended_since_head(repo, workspace, path) == []
    path.write_text(line("r-9") + line("r-2"))  # a person's own edit
    assert appended_since_head(repo, workspace, path) == []
    path.unlink()
    assert appended_since_head(repo, workspace, path) == []


def test_one_commit_holds_every_ledger_with_pending_lines(site: Site, repo: GitRepo) -> None:
    runtime = site.runtime()
    first = committed_log(site, line("r-1"), "a.jsonl")
    second = committed_log(site, line("r-1"), "b.jsonl")
    untouched = committed_log(site, line("r-1"), "c.jsonl")
    for path in (first, second):
        with open(path, "a") as handle:
            handle.write(line("r-2"))
    pending = {
        p: appended_since_head(repo, runtime.workspace, p) for p in (first, second, untouched)
    }
    built: list[dict[Path, list[str]]] = []

    def build(waiting: dict[Path, list[str]]) -> CommitRequest:
        built.append(waiting)
        return CommitRequest("rating", "w", f"{len(waiting)} files", list(waiting))

    event = commit_uncommitted(runtime, repo, pending, build)
    assert built == [{first: [line("r-2").strip()], second: [line("r-2").strip()]}]
    assert event is not None and event.commit is not None
    assert site.git("show", "--name-only", "--format=%s", "HEAD").split() == [
        "rating(w):",
        "2",
        "files",
        "_data/agents/w/a.jsonl",
        "_data/agents/w/b.jsonl",
    ]
    assert commit_uncommitted(runtime, repo, {first: []}, build) is None
    assert len(built) == 1


def test_committed_ledgers_remember_what_this_process_committed(site: Site, repo: GitRepo) -> None:
    runtime = site.runtime()
    path = committed_log(site, line("d-1"))
    with open(path, "a") as handle:
        handle.write(line("d-2"))
    ledgers = CommittedLedgers()
    assert not ledgers.unchanged(runtime, repo, path)
    event = ledgers.commit(runtime, repo, CommitRequest("sync", "w", "ledger", [path]), [path])
    assert event is not None and event.commit is not None
    assert ledgers.unchanged(runtime, repo, path)
    assert not CommittedLedgers().unchanged(runtime, repo, path)  # another process knows nothing
    with open(path, "a") as handle:
        handle.write(line("d-3"))
    assert not ledgers.unchanged(runtime, repo, path)


def test_a_reset_that_drops_the_committed_ledger_is_noticed(site: Site, repo: GitRepo) -> None:
    runtime = site.runtime()
    path = committed_log(site, line("d-1"))
    with open(path, "a") as handle:
        handle.write(line("d-2"))
    ledgers = CommittedLedgers()
    ledgers.commit(runtime, repo, CommitRequest("sync", "w", "ledger", [path]), [path])
    assert ledgers.unchanged(runtime, repo, path)
    site.git("reset", "-q", "--soft", "HEAD~1")  # the file stays as it was committed
    assert not ledgers.unchanged(runtime, repo, path)


def test_a_file_that_differs_from_head_is_told_and_one_that_does_not_remembered(
    site: Site, repo: GitRepo
) -> None:
    runtime = site.runtime()
    path = committed_log(site, "snippet\n", "feedback.md")
    ledgers = CommittedLedgers()
    assert not ledgers.differs_from_head(runtime, repo, path)
    assert ledgers.unchanged(runtime, repo, path)  # git vouched for it: not asked again
    path.write_text("snippet, regenerated\n")  # written by a pass killed before its commit
    assert ledgers.differs_from_head(runtime, repo, path)
    assert not ledgers.differs_from_head(runtime, repo, path.with_name("none.md"))
    untracked = path.with_name("new.md")
    untracked.write_text("not committed\n")
    assert not ledgers.differs_from_head(runtime, repo, untracked)  # the new files' own step


def test_without_git_nothing_is_remembered(site: Site) -> None:
    site.configure("git:\n  enabled: false\n")
    runtime = Runtime.open(str(site.root), None)
    path = site.agent("w") / "ledger.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(line("d-1"))
    ledgers = CommittedLedgers()
    ledgers.commit(runtime, None, CommitRequest("sync", "w", "ledger", [path]), [path])
    assert not ledgers.unchanged(runtime, None, path)


def test_thousands_of_decided_files_are_remembered_in_little_memory(
    site: Site, repo: GitRepo
) -> None:
    """The daemon remembers every decided file for its life (10,000 after a long day): each
    must cost a few dozen bytes, not the 800 its path and state took as objects."""
    runtime = site.runtime()
    folder = site.agent("w") / "approved"
    folder.mkdir(parents=True)
    paths = [folder / f"item-{number:04d}.json" for number in range(2000)]
    for number, path in enumerate(paths):
        path.write_text(json.dumps({"id": f"item-{number:04d}"}) + "\n")
    site.git("add", "-A")
    site.git("commit", "-q", "-m", "decided files")
    ledgers = CommittedLedgers()
    repo.file_ids_at_head([runtime.workspace.relative(path) for path in paths])  # trees parsed

    tracemalloc.start()
    try:
        for path in paths:
            seen = Path(str(path))  # as a pass sees it: its own objects, kept only if remembered
            state = file_state(seen)
            assert state is not None
            ledgers.remember(runtime, repo, seen, state)
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert ledgers.files_remembered == 2000
    assert kept / 2000 < 200, f"{kept / 2000:.0f} bytes a file"
    assert ledgers.unchanged_among(runtime, repo, paths) == set(paths)
    paths[7].write_text('{"id": "item-0007", "edited": true}\n')
    assert ledgers.unchanged_among(runtime, repo, paths) == set(paths) - {paths[7]}


def test_what_one_process_remembered_holds_in_the_next(site: Site, repo: GitRepo) -> None:
    """Kept in `.feedbackd/`: the next process knows the ledger committed as it is, until the
    file changes or HEAD's version does; a damaged file is as none."""
    runtime = site.runtime()
    path = committed_log(site, line("d-1"))
    with open(path, "a") as handle:
        handle.write(line("d-2"))
    ledgers = CommittedLedgers.kept_in(site.root / ".feedbackd")
    ledgers.commit(runtime, repo, CommitRequest("sync", "w", "ledger", [path]), [path])
    ledgers.save()
    assert CommittedLedgers.kept_in(site.root / ".feedbackd").unchanged(runtime, repo, path)

    site.git("reset", "-q", "--soft", "HEAD~1")  # the file stays as it was committed
    assert not CommittedLedgers.kept_in(site.root / ".feedbackd").unchanged(runtime, repo, path)
    site.git("reset", "-q", "--soft", "HEAD@{1}")
    assert CommittedLedgers.kept_in(site.root / ".feedbackd").unchanged(runtime, repo, path)
    with open(path, "a") as handle:
        handle.write(line("d-3"))
    assert not CommittedLedgers.kept_in(site.root / ".feedbackd").unchanged(runtime, repo, path)

    store = site.root / ".feedbackd" / COMMITTED_FILE
    store.write_bytes(store.read_bytes()[:-3])
    assert CommittedLedgers.kept_in(site.root / ".feedbackd").files_remembered == 0


def test_an_idle_run_once_asks_git_nothing_about_what_the_last_one_vouched_for(
    tmp_path: Path,
) -> None:
    """A site with decisions: the first `run --once` asks git which decided files changed
    since their commit and reads HEAD's ledgers; the next one, nothing changed, does neither.
    A decided file edited since is still committed again, and a decision whose commit a soft
    reset took away is committed again."""
    site = Site(tmp_path / "site")
    for number in range(3):
        site.write("w", f"qi-{number}.json", draft({"title": f"Draft {number}"}))
    site.reconcile()
    for number in range(3):
        site.move("w", f"qi-{number}.json", "approved")
    assert site.cli_process("run", "--once").returncode == 0
    calls = []
    for run in range(2):
        wrapper, log = counting_git(tmp_path / f"bin-{run}")
        env = {**os.environ, "GIT_PYTHON_GIT_EXECUTABLE": str(wrapper)}
        assert site.cli_process("run", "--once", env=env).returncode == 0
        calls.append(log.read_text().splitlines())
    assert [call for call in calls[1] if call.startswith("diff-index")] == []

    site.write("w", "qi-1.json", draft({"title": "Edited after its approval"}), "approved")
    commits = site.commit_count()
    assert site.cli_process("run", "--once").returncode == 0
    assert site.commit_count() == commits + 1
    assert "Edited after its approval" in site.git("show", "HEAD:_data/agents/w/approved/qi-1.json")

    site.git("reset", "-q", "--soft", "HEAD~1")
    assert site.cli_process("run", "--once").returncode == 0
    assert site.commit_count() == commits + 1
    assert site.git("status", "--porcelain", "_data") == ""

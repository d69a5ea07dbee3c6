"""A full disk under the running daemon, on a small file system of its own (a tmpfs mounted for
the test, which needs root; without it the test is skipped and says why).

Each pass fails while the disk is full: `status` must say so (even though the status file
cannot be written anew), and the work must go on within seconds once space is freed, not after
the minute-long backoff of other failures.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from feedbackd.app.daemon.statusfile import read_status, write_status
from feedbackd.app.reconcile import reconcile_all
from feedbackd.core.errors import FeedbackdError
from feedbackd.edges.git.userindex import LAGGING_MARK
from tests.daemon_kit import DaemonProcess, NotifyListener, committed, status_json, wait_for
from tests.web_kit import serving
from tests.workspace_kit import Site, draft

# Well below the daemon's longest backoff (60 s): the approval must be recorded this soon after
# space is freed.
SOON_AFTER_SPACE_S = 15.0
FAILURES = 6  # after which other failures are tried again only 32 s later
RATING = {
    "transaction_id": "6f1c2a9e-3b4d-4c5e-8f70-1a2b3c4d5e6f",
    "provider_agent": "p",
    "skill_id": "s1",
    "rating": 5,
    "result_quality": "excellent",
    "would_reuse": True,
    "cost_value_ratio": "great",
}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ws"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(folder: Path, leave: int = 0) -> Path:
    """Fill the file system with one file until it is full, then give `leave` bytes back;
    the file."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (64 * 1024, 512, 1):  # big pieces, then the last few bytes
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
    finally:
        os.close(fd)
    probe = folder / "probe"
    with pytest.raises(OSError) as full:
        probe.write_bytes(b"x" * (leave + 8192))
    assert full.value.errno == errno.ENOSPC
    probe.unlink(missing_ok=True)
    return filler


@pytest.mark.slow
def test_a_full_disk_shows_in_status_and_work_resumes_soon_after_space_is_freed(
    small_disk: Path,
) -> None:
    site = Site(small_disk)
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    listener = NotifyListener(small_disk.parent)
    daemon = DaemonProcess(site, listener)
    try:
        daemon.wait_ready()
        wait_for(lambda: committed(site, "draft(a1)"), what="the draft")
        filler = _fill(small_disk)
        site.write("a1", "q1.json", draft({"title": "Hello, world"}))
        site.move("a1", "q1.json", "approved")

        def disk_full_reported() -> bool:
            problems = " ".join(status_json(site)["problems"])
            return "No space left on device" in problems or "disk is full" in problems

        wait_for(disk_full_reported, what="status to report the full disk")
        # Full for a while: the passes failed often enough that the usual backoff has grown
        # to half a minute.
        wait_for(
            lambda: daemon.log().count("pass failed") >= FAILURES,
            what=f"{FAILURES} failed passes",
        )
        assert disk_full_reported()
        assert not committed(site, "approve(a1)")
        filler.unlink()
        wait_for(
            lambda: committed(site, "approve(a1): q1"),
            SOON_AFTER_SPACE_S,
            "the approval, soon after space was freed",
        )
        wait_for(lambda: not disk_full_reported(), what="the problem to leave status")
        assert daemon.proc.poll() is None, daemon.log()
    finally:
        daemon.close()
        listener.close()


def test_the_status_file_is_rewritten_in_place_when_the_disk_is_full(small_disk: Path) -> None:
    state_dir = small_disk / ".feedbackd"
    state_dir.mkdir()
    started = datetime.now(UTC)
    write_status(state_dir, pid=os.getpid(), started_at=started)
    _fill(small_disk)
    write_status(state_dir, pid=os.getpid(), started_at=started, problems=["a1: disk full"])
    recorded = read_status(state_dir)
    assert recorded is not None and recorded["problems"] == ["a1: disk full"]


def _files_of(root: Path) -> dict[str, bytes]:
    """Every file of the workspace with its content, but git's own folder, the disk filler and
    the empty lock files (never deleted, whoever made them)."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and ".git" not in path.parts
        and path.name != "filler.bin"
        and path.suffix != ".lock"
    }


def test_commands_on_a_full_disk_say_so_and_leave_nothing_half_written(small_disk: Path) -> None:
    site = Site(small_disk)
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    site.reconcile()
    head = site.git("rev-parse", "HEAD")
    filler = _fill(small_disk)
    before = _files_of(small_disk)
    for args in (
        ("approve", "a1", "q1"),
        ("feedback", "submit", "--as", "buyer1", "--json", json.dumps(RATING)),
    ):
        done = site.cli(*args)
        assert done.returncode == 1, (args, done.stderr)
        assert done.stderr.startswith("error: "), done.stderr
        assert "disk is full" in done.stderr and "Traceback" not in done.stderr
        assert _files_of(small_disk) == before, args
        assert site.git("rev-parse", "HEAD") == head
    filler.unlink()
    done = site.cli("approve", "a1", "q1")
    assert done.returncode == 0, done.stderr


def test_the_ratings_index_on_a_full_disk_is_kept_and_the_error_says_so(small_disk: Path) -> None:
    from feedbackd.core.ratings.records import parse_rating
    from feedbackd.edges.clock import utcnow
    from feedbackd.edges.ratingstore import INDEX_NAME, RatingStore

    site = Site(small_disk)
    store = RatingStore(site.runtime().workspace)
    for number in range(3):
        doc = {**RATING, "transaction_id": f"6f1c2a9e-3b4d-4c5e-8f70-{number:012d}"}
        store.append(parse_rating(doc, requester="buyer1", now=utcnow()))
    [month] = (site.agent("p") / "ratings" / "s1").iterdir()
    index = small_disk / ".feedbackd" / INDEX_NAME
    kept = index.read_bytes()
    _fill(small_disk)
    # Rewritten in place (same size, new time): the index must read it again and write.
    month.write_bytes(month.read_bytes().replace(b'"rating": 5', b'"rating": 4'))
    with pytest.raises(OSError) as full:
        store.has_transaction("6f1c2a9e-3b4d-4c5e-8f70-999999999999")
    assert full.value.errno == errno.ENOSPC
    assert index.read_bytes() == kept  # not deleted as if it were damaged


# --- the git index left behind the commits ---------------------------------------------------
# Left free on the disk: room for feedbackd's lock files, none for an index of BIG_INDEX_FILES
# entries (git writes a new index whole, then renames it over the old one).
ROOM_WITHOUT_AN_INDEX = 64 * 1024
BIG_INDEX_FILES = 1500


def _with_a_big_index(site: Site) -> None:
    """Empty files tracked under long names (no room taken on a tmpfs, one blob): the index
    outgrows ROOM_WITHOUT_AN_INDEX."""
    folder = site.root / "notes"
    folder.mkdir()
    for number in range(BIG_INDEX_FILES):
        (folder / f"{number:05d}-{'n' * 100}.txt").touch()
    site.git("add", "notes")
    site.git("commit", "-q", "-m", "notes")
    assert (site.root / ".git" / "index").stat().st_size > 2 * ROOM_WITHOUT_AN_INDEX


def _approved_with_the_index_behind(site: Site) -> str:
    """q1 approved and committed, its index entries left as they were before that commit,
    with the mark an index update that failed leaves (userindex._lagging); HEAD."""
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    site.write("a1", "q2.json", draft({"title": "Other"}))
    site.reconcile()
    site.move("a1", "q1.json", "approved")
    site.reconcile()
    assert committed(site, "approve(a1): q1")
    changed = site.git("diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD").split()
    site.git("reset", "-q", "HEAD~1", "--", *changed)
    (site.root / ".git" / LAGGING_MARK).touch()
    assert "_data/agents/a1/approved/q1.json" in _behind(site)
    return site.git("rev-parse", "HEAD")


def _behind(site: Site) -> list[str]:
    """The paths under _data whose index entries differ from HEAD."""
    return site.git(
        "diff", "--cached", "--name-only", "--no-renames", "HEAD", "--", "_data"
    ).split()


def test_an_index_left_behind_is_healed_once_space_is_back(small_disk: Path) -> None:
    """The heal fails while the disk is full (git cannot write a new index): the index is
    marked lagging still, and the next writer once space is freed brings it in line, so that
    the user's next `git commit` does not take the approval back."""
    site = Site(small_disk)
    _with_a_big_index(site)
    head = _approved_with_the_index_behind(site)
    filler = _fill(small_disk, leave=ROOM_WITHOUT_AN_INDEX)
    site.cli("run", "--once")  # the heal cannot write the index
    assert "_data/agents/a1/approved/q1.json" in _behind(site)
    assert (site.root / ".git" / LAGGING_MARK).exists()
    filler.unlink()
    done = site.cli("run", "--once")
    assert done.returncode == 0, done.stderr
    assert _behind(site) == []
    assert site.git("status", "--porcelain", "--", "_data") == ""
    assert not (site.root / ".git" / LAGGING_MARK).exists()
    assert site.git("rev-parse", "HEAD") == head  # nothing was committed again


def test_an_index_behind_many_later_commits_is_healed(tmp_path: Path) -> None:
    """While heals fail (the disk full), passes go on committing: the heal that succeeds at
    last looks at every commit made since the index fell behind, not at the last twenty."""
    site = Site(tmp_path / "ws")
    _approved_with_the_index_behind(site)
    for number in range(25):  # passes that took no write lock, so tried no heal
        site.write("a2", f"d{number}.json", draft({"title": f"Draft {number}"}))
        site.reconcile()
    assert "_data/agents/a1/approved/q1.json" in _behind(site)
    done = site.cli("run", "--once")
    assert done.returncode == 0, done.stderr
    assert _behind(site) == []
    assert not (site.root / ".git" / LAGGING_MARK).exists()


@pytest.mark.slow
def test_the_daemon_heals_an_index_left_behind_soon_after_space_is_freed(
    small_disk: Path,
) -> None:
    """A daemon whose heal failed (at its start here) tries again by itself, with nothing else
    to do, and says meanwhile in `status` that the index lags."""
    site = Site(small_disk)
    _with_a_big_index(site)
    _approved_with_the_index_behind(site)
    filler = _fill(small_disk, leave=ROOM_WITHOUT_AN_INDEX)
    listener = NotifyListener(small_disk.parent)
    daemon = DaemonProcess(site, listener)
    try:
        daemon.wait_ready()
        wait_for(
            lambda: "git index" in " ".join(status_json(site)["problems"]),
            what="status to say the git index lags",
        )
        assert "_data/agents/a1/approved/q1.json" in _behind(site)
        filler.unlink()
        # (the heal resets the index, then removes its mark: a look between sees one, not both)
        wait_for(
            lambda: not _behind(site) and not (site.root / ".git" / LAGGING_MARK).exists(),
            SOON_AFTER_SPACE_S,
            "the index healed and its mark gone, soon after space was freed",
        )
        wait_for(
            lambda: "git index" not in " ".join(status_json(site)["problems"]),
            what="the problem to leave status",
        )
        assert daemon.proc.poll() is None, daemon.log()
    finally:
        daemon.close()
        listener.close()


def test_doctor_reports_an_index_left_behind_and_how_to_heal_it(tmp_path: Path) -> None:
    """A `git commit` of the user's would undo the decisions the index lags behind: doctor says
    so (and changes nothing); once healed it finds no problem."""
    site = Site(tmp_path / "ws")
    _approved_with_the_index_behind(site)
    index = (site.root / ".git" / "index").read_bytes()
    done = site.cli("doctor", "--json")
    assert done.returncode == 1, done.stdout
    report = json.loads(done.stdout)
    [problem] = report["problems"]
    assert set(problem) == {"path", "message", "hint"}
    assert problem["path"] == ".git/index"
    assert "lags behind feedbackd's commits" in problem["message"]
    assert "_data/agents/a1/approved/q1.json" in problem["message"]
    assert "`feedbackd run --once`" in problem["hint"]
    assert "git reset -q HEAD -- _data/agents/a1/approved/q1.json" in problem["hint"]
    assert (site.root / ".git" / "index").read_bytes() == index
    assert (site.root / ".git" / LAGGING_MARK).exists()
    human = site.cli("doctor")
    assert human.returncode == 1 and "lags behind feedbackd's commits" in human.stdout

    assert site.cli("run", "--once").returncode == 0
    done = site.cli("doctor", "--json")
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["problems"] == []


def test_doctor_reports_an_index_left_behind_with_no_mark(tmp_path: Path) -> None:
    """An index left behind by an earlier version, which lost the mark: doctor still finds
    it among the paths of the last commits, and gives the git command that heals it."""
    site = Site(tmp_path / "ws")
    _approved_with_the_index_behind(site)
    (site.root / ".git" / LAGGING_MARK).unlink()
    done = site.cli("doctor", "--json")
    assert done.returncode == 1, done.stdout
    [problem] = json.loads(done.stdout)["problems"]
    assert problem["path"] == ".git/index"
    command = problem["hint"].split("`")[1]
    assert command.startswith("git reset -q HEAD -- ")
    subprocess.run(command, shell=True, cwd=site.root, check=True)
    assert _behind(site) == []
    assert site.cli("doctor").returncode == 0


# --- a decision on a nearly full disk ---------------------------------------------------------
# Room left on the disk: a few pages, enough for the command's lock files and some of what a
# decision writes (its lessons, its ledger line), never for its commit.
NEARLY_FULL = (4 * 1024, 8 * 1024, 16 * 1024)
DECIDE = {
    "approve": (("approve", "a1", "q1"), "approved"),
    "reject": (("reject", "a1", "q1", "--notes", "Too long for the slot"), "rejected"),
}


def _data_files(site: Site) -> dict[str, bytes]:
    return {
        path: content for path, content in _files_of(site.root).items() if path.startswith("_data")
    }


def _decided_once(site: Site, state: str) -> bool:
    lines = (site.agent("a1") / "decisions.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    return [(r["item"], r["state"]) for r in records if r["item"] == "q1"] == [("q1", state)]


@pytest.mark.parametrize("room", NEARLY_FULL)
@pytest.mark.parametrize("decision", sorted(DECIDE))
def test_a_decision_that_fails_on_a_nearly_full_disk_leaves_the_draft_in_the_queue(
    small_disk: Path, decision: str, room: int
) -> None:
    """The command says the disk is full and leaves the draft where it was, unchanged, and
    nothing of the decision behind; run again once space is freed, it records it once."""
    args, folder = DECIDE[decision]
    site = Site(small_disk)
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    site.reconcile()
    head = site.git("rev-parse", "HEAD")
    before = _data_files(site)
    filler = _fill(small_disk, leave=room)
    done = site.cli(*args)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("error: disk_full: "), done.stderr
    assert "Traceback" not in done.stderr
    assert _data_files(site) == before
    assert site.git("rev-parse", "HEAD") == head
    filler.unlink()
    done = site.cli(*args)
    assert done.returncode == 0, done.stderr
    assert committed(site, f"{decision}(a1): q1")
    assert (site.agent("a1") / folder / "q1.json").is_file()
    assert not (site.agent("a1") / "queue" / "q1.json").exists()
    assert _decided_once(site, folder)
    assert site.git("status", "--porcelain", "--", "_data") == ""


def test_a_pass_whose_decision_commit_fails_takes_back_what_it_wrote(small_disk: Path) -> None:
    """The daemon's pass on a nearly full disk: the decision's lesson and ledger line are taken
    back when its commit cannot be made, so that the decision is recorded once space is freed
    by an ordinary commit, not as one completed after an interruption."""
    site = Site(small_disk)
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    site.reconcile()
    site.write("a1", "q1.json", draft({"title": "Hello"}, rejectionFeedback="Too long"), "rejected")
    (site.agent("a1") / "queue" / "q1.json").unlink()
    before = _data_files(site)
    filler = _fill(small_disk, leave=8 * 1024)
    with pytest.raises(FeedbackdError):
        reconcile_all(site.runtime(), ["a1"])
    assert _data_files(site) == before  # no lesson in feedback.json, no ledger line
    filler.unlink()
    reconcile_all(site.runtime(), ["a1"])
    assert site.git("log", "-1", "--format=%s").startswith("reject(a1): q1")
    assert "interruption" not in site.git("log", "--format=%s")
    assert _decided_once(site, "rejected")
    assert "Too long" in json.dumps(site.feedback("a1"))


@pytest.mark.parametrize("room", NEARLY_FULL)
def test_an_approval_over_http_on_a_nearly_full_disk_is_507_and_keeps_the_draft(
    small_disk: Path, room: int
) -> None:
    """The panel and the API decide through the command's path: the same answer, 507 (the
    request goes through once space is freed), and the draft stays in the queue."""
    site = Site(small_disk)
    site.write("a1", "q1.json", draft({"title": "Hello"}))
    site.reconcile()
    before = _data_files(site)
    with serving(site.root) as client:
        filler = _fill(small_disk, leave=room)
        answer = client.post("/api/agents/a1/queue/q1/approve", {"edits": {"title": "Hi"}})
        assert answer.status == 507, answer.text
        assert answer.json()["error"] == "disk_full"
        assert "still in _data/agents/a1/queue/" in answer.json()["message"]
        assert _data_files(site) == before
        filler.unlink()
        answer = client.post("/api/agents/a1/queue/q1/approve", {"edits": {"title": "Hi"}})
        assert answer.status == 200, answer.text
    assert _decided_once(site, "approved")
    assert json.loads((site.agent("a1") / "approved" / "q1.json").read_text())["contentData"] == {
        "title": "Hi"
    }

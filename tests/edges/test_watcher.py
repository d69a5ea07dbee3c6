"""The watcher, run for real (inotify; watchfiles when polling) on folders in tmp_path."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from watchfiles import Change

from feedbackd.core.workspacepaths import ITEM_FOLDERS
from feedbackd.edges import inotify
from feedbackd.edges.files import TMP_SUFFIX, atomic_write_text
from feedbackd.edges.inotify import TreeWatch
from feedbackd.edges.watcher import (
    EVERYTHING,
    QUIET_MS,
    STOP_LOOK_MS,
    Changes,
    classify,
    watch_agents,
)
from tests.daemon_kit import wait_for

DEADLINE_S = 10.0
WATCHER_DEBOUNCE_MS = 400  # the `watcher` fixture's


class Recorder:
    """Runs watch_agents in a thread and hands its batches over through a queue."""

    def __init__(self, data_dir: Path, *, debounce_ms: int = 1600) -> None:
        self.stop = threading.Event()
        self.finished = threading.Event()
        self.batches: queue.Queue[Changes] = queue.Queue()
        self.seen: list[Changes] = []
        self.error: BaseException | None = None
        self.thread_id = 0  # the watching thread's, as the kernel knows it
        self._args = (data_dir, debounce_ms)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        data_dir, debounce_ms = self._args
        self.thread_id = threading.get_native_id()
        try:
            for changes in watch_agents(data_dir, self.stop, debounce_ms=debounce_ms, check_ms=100):
                self.batches.put(changes)
        except BaseException as error:
            self.error = error
        finally:
            self.finished.set()

    def next(self) -> Changes:
        changes = self.batches.get(timeout=DEADLINE_S)
        self.seen.append(changes)
        return changes

    def until(self, wanted: Callable[[Changes], bool]) -> list[Changes]:
        """Batches up to and including the first one that satisfies `wanted`."""
        deadline = time.monotonic() + DEADLINE_S
        batches = []
        while time.monotonic() < deadline:
            batches.append(self.next())
            if wanted(batches[-1]):
                return batches
        raise AssertionError(f"no wanted batch within {DEADLINE_S} s; got {batches}")

    def until_named(self, agents: set[str]) -> list[Changes]:
        """Batches until every one of these agents has been named (possibly across batches)."""
        named: set[str] = set()

        def all_named(changes: Changes) -> bool:
            named.update(changes.agents)
            return named >= agents

        return self.until(all_named)

    def close(self) -> float:
        """Stop the watcher and return how long it took to finish."""
        began = time.monotonic()
        self.stop.set()
        assert self.finished.wait(DEADLINE_S), "the watcher did not stop"
        self._thread.join(DEADLINE_S)
        assert self.error is None, self.error
        return time.monotonic() - began


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "workspace" / "_data"
    for agent in ("writer", "editor", "noise"):
        for folder in ITEM_FOLDERS:
            (data / "agents" / agent / folder).mkdir(parents=True)
    (data / "inbox" / "ratings").mkdir(parents=True)
    return data


@pytest.fixture
def watcher(data_dir: Path) -> Iterator[Recorder]:
    recorder = Recorder(data_dir, debounce_ms=WATCHER_DEBOUNCE_MS)
    assert recorder.next() == EVERYTHING  # the watch is in place
    yield recorder
    recorder.close()


def touches(agent: str) -> Callable[[Changes], bool]:
    return lambda changes: agent in changes.agents


def draft(data_dir: Path, agent: str, name: str, folder: str = "queue") -> Path:
    path = data_dir / "agents" / agent / folder / name
    path.write_text('{"contentData": {"title": "Draft"}}\n')
    return path


def test_first_batch_is_everything_once_the_watch_is_in_place(watcher: Recorder) -> None:
    assert watcher.seen == [EVERYTHING]
    assert EVERYTHING.inbox and EVERYTHING.everything and not EVERYTHING.agents


def test_file_written_in_an_agent_folder_names_that_agent(
    watcher: Recorder, data_dir: Path
) -> None:
    draft(data_dir, "writer", "qi-1.json")
    batches = watcher.until(touches("writer"))
    assert all(b.agents == {"writer"} and not b.everything and not b.inbox for b in batches)


def test_polling_mode_for_network_file_systems(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WATCHFILES_FORCE_POLLING", "1")
    recorder = Recorder(data_dir, debounce_ms=400)
    try:
        assert recorder.next() == EVERYTHING
        draft(data_dir, "editor", "qi-polled.json")
        recorder.until(touches("editor"))
    finally:
        recorder.close()


def test_atomic_save_names_the_agent(watcher: Recorder, data_dir: Path) -> None:
    atomic_write_text(data_dir / "agents" / "editor" / "queue" / "qi-2.md", "---\ntitle: T\n---\n")
    batches = watcher.until(touches("editor"))
    assert all(b.agents == {"editor"} and not b.everything for b in batches)


def test_moved_file_names_the_agent(watcher: Recorder, data_dir: Path) -> None:
    item = draft(data_dir, "writer", "qi-3.json")
    watcher.until(touches("writer"))
    item.rename(data_dir / "agents" / "writer" / "approved" / "qi-3.json")
    batches = watcher.until(touches("writer"))
    assert all(b.agents == {"writer"} and not b.everything for b in batches)


def test_file_moved_between_agents_names_both(watcher: Recorder, data_dir: Path) -> None:
    item = draft(data_dir, "writer", "qi-4.json")
    watcher.until(touches("writer"))
    item.rename(data_dir / "agents" / "editor" / "queue" / "qi-4.json")
    batches = watcher.until_named({"writer", "editor"})
    assert not any(b.everything for b in batches)


def test_renamed_agent_folder_means_everything(watcher: Recorder, data_dir: Path) -> None:
    (data_dir / "agents" / "writer").rename(data_dir / "agents" / "author")
    # The old and new names are reported too, for a caller that only looks at agents.
    batches = watcher.until_named({"writer", "author"})
    assert any(b.everything and b.inbox for b in batches)


def test_new_agent_folder_means_everything(watcher: Recorder, data_dir: Path) -> None:
    (data_dir / "agents" / "newcomer").mkdir()
    batches = watcher.until(lambda b: b.everything)
    assert "newcomer" in batches[-1].agents


def test_renamed_queue_folder_names_the_agent(watcher: Recorder, data_dir: Path) -> None:
    (data_dir / "agents" / "editor" / "queue").rename(data_dir / "agents" / "editor" / "old-queue")
    watcher.until(touches("editor"))


def test_inbox_changes_are_flagged(watcher: Recorder, data_dir: Path) -> None:
    (data_dir / "inbox" / "ratings" / "r1.json").write_text("{}\n")
    batches = watcher.until(lambda b: b.inbox)
    assert all(not b.agents and not b.everything for b in batches)


def test_burst_of_300_files_arrives_in_few_batches(watcher: Recorder, data_dir: Path) -> None:
    """A batch ends only after a pause in the events (at least QUIET_MS) or DEBOUNCE_MS into
    it: the burst arrives in one batch, or one more for each pause the machine made the writer
    take (a busy machine) and each debounce it lasted."""
    written = [time.monotonic()]
    for number in range(300):
        draft(data_dir, "writer", f"qi-{number:03d}.json")
        written.append(time.monotonic())
    # A marker written after the burst: once it is reported, the whole burst has been.
    draft(data_dir, "editor", "marker.json")
    batches = watcher.until(touches("editor"))
    assert all(b.agents <= {"writer", "editor"} and not b.everything for b in batches)
    # A pause between two events lies within the time of two writes around it.
    pauses = sum(b - a >= QUIET_MS / 1000 for a, b in zip(written, written[2:], strict=False))
    debounces = int((written[-1] - written[0]) * 1000 / WATCHER_DEBOUNCE_MS)
    assert 1 <= sum("writer" in b.agents for b in batches) <= 2 + pauses + debounces


def test_own_temporary_error_and_editor_files_are_ignored(
    watcher: Recorder, data_dir: Path
) -> None:
    queue_dir = data_dir / "agents" / "noise" / "queue"
    for name in (
        f".qi-1.json.0a1b2c3d{TMP_SUFFIX}",
        "qi-1.json.error",
        ".qi-1.json.swp",
        ".qi-1.json.swo",
        "qi-1.json~",
        ".#qi-1.json",
        "#qi-1.json#",
        "4913",
    ):
        (queue_dir / name).write_text("x\n")
        (queue_dir / name).unlink()
    (data_dir / "agents" / "noise" / "feedback.json.error").write_text("feedbackd: bad\n")
    draft(data_dir, "writer", "signal.json")  # reported after everything above
    batches = watcher.until(touches("writer"))
    assert all("noise" not in b.agents and not b.everything for b in batches)


def test_stop_ends_the_iteration_promptly(data_dir: Path) -> None:
    recorder = Recorder(data_dir, debounce_ms=1600)
    assert recorder.next() == EVERYTHING
    assert recorder.close() < 2.0


def test_stop_during_a_burst_ends_the_iteration(data_dir: Path) -> None:
    recorder = Recorder(data_dir, debounce_ms=60_000)
    assert recorder.next() == EVERYTHING
    draft(data_dir, "writer", "qi-1.json")
    assert recorder.close() < 2.0


# The daemon's shape: the watcher in the main thread, SIGTERM setting the stop event.
SIGTERM_CHILD = """
import signal, sys, threading
from pathlib import Path
from feedbackd.edges.watcher import watch_agents
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
for changes in watch_agents(Path(sys.argv[1]), stop, debounce_ms=1600):
    print("batch", sorted(changes.agents), changes.everything, flush=True)
print("stopped", flush=True)
"""


def test_sigterm_in_the_main_thread_stops_the_watcher(data_dir: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_CHILD, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "batch [] True\n"
    draft(data_dir, "writer", "qi-1.json")
    assert child.stdout.readline() == "batch ['writer'] False\n"
    began = time.monotonic()
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=DEADLINE_S) == 0
    assert time.monotonic() - began < 2.0
    assert child.stdout.read() == "stopped\n"
    child.stdout.close()


def test_waits_for_a_missing_data_dir_and_can_be_stopped_meanwhile(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "not-yet" / "_data")
    assert recorder.batches.empty()
    assert recorder.close() < 2.0


def test_data_dir_that_appears_later_is_watched(tmp_path: Path) -> None:
    data = tmp_path / "later" / "_data"
    recorder = Recorder(data, debounce_ms=400)
    try:
        (data / "agents" / "writer" / "queue").mkdir(parents=True)
        assert recorder.next() == EVERYTHING
        draft(data, "writer", "qi-1.json")
        recorder.until(touches("writer"))
    finally:
        recorder.close()


def test_replaced_data_dir_is_watched_again(watcher: Recorder, data_dir: Path) -> None:
    shutil.rmtree(data_dir)
    (data_dir / "agents" / "writer" / "queue").mkdir(parents=True)
    # The new watch's first batch, EVERYTHING itself: the old watch's last (the folders of the
    # deleted tree) may say "everything" too, before the new one is in place.
    watcher.until(lambda b: b is EVERYTHING)
    draft(data_dir, "writer", "qi-after.json")
    watcher.until(touches("writer"))


def test_data_dir_that_is_a_file_is_waited_on(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "_data"
    not_a_folder.write_text("oops\n")
    recorder = Recorder(not_a_folder)
    assert recorder.batches.empty()
    assert recorder.close() < 2.0


# classify() on its own: the rules, without a watcher.


def classified(data_dir: Path, *events: tuple[Change, str]) -> Changes:
    return classify(data_dir, [(int(change), str(data_dir / path)) for change, path in events])


def test_classify_agents_and_inbox(tmp_path: Path) -> None:
    changes = classified(
        tmp_path,
        (Change.added, "agents/writer/queue/qi-1.json"),
        (Change.deleted, "agents/editor/approved/qi-2.yaml"),
        (Change.modified, "inbox/ratings/r.json"),
    )
    assert changes == Changes(frozenset({"writer", "editor"}), inbox=True, everything=False)


@pytest.mark.parametrize(
    "path",
    [
        "",  # the data folder itself
        "agents",  # the agents folder itself
        "agents/gone",  # an agent folder deleted or renamed away
    ],
)
def test_classify_folder_level_changes_mean_everything(tmp_path: Path, path: str) -> None:
    (tmp_path / "agents").mkdir()
    changes = classified(tmp_path, (Change.deleted, path))
    assert changes.everything and changes.inbox


def test_classify_ignores_what_is_not_an_agent(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "README.md").write_text("notes\n")
    outside = tmp_path.parent / "elsewhere" / "x.json"
    changes = classify(
        tmp_path,
        [
            (int(Change.modified), str(tmp_path / "agents" / "README.md")),
            (int(Change.added), str(tmp_path / "agents" / "bad name" / "queue" / "x.json")),
            (int(Change.added), str(tmp_path / "agents" / ".." / "queue" / "x.json")),
            (int(Change.added), str(tmp_path / "notes.txt")),
            (int(Change.added), str(outside)),
        ],
    )
    assert not changes
    assert changes == Changes()


def test_classify_a_change_of_webhouses_queue_file_means_everything(tmp_path: Path) -> None:
    queue_file = tmp_path / "curation-queue.json"
    written = [(int(Change.modified), str(queue_file))]
    assert classify(tmp_path, written, queue_file) == EVERYTHING
    assert not classify(tmp_path, written)  # without the adapter it is any other file
    beside = [(int(Change.added), str(tmp_path / "curation-queue.json.error"))]
    assert not classify(tmp_path, beside, queue_file)  # its explanation is feedbackd's own


def test_watching_sees_webhouse_rewrite_its_queue_in_place(tmp_path: Path) -> None:
    data_dir = tmp_path / "_data"
    data_dir.mkdir()
    queue_file = data_dir / "curation-queue.json"
    queue_file.write_text("[]")
    stop, found = threading.Event(), queue.Queue[Changes]()

    def watch() -> None:
        for changes in watch_agents(
            data_dir, stop, debounce_ms=50, check_ms=100, shared_file=queue_file
        ):
            found.put(changes)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        assert found.get(timeout=DEADLINE_S) == EVERYTHING  # the first batch, as always
        with queue_file.open("r+") as handle:  # fs.writeFile: truncate and write in place
            handle.truncate(0)
            handle.write('[{"id": "qi-1"}]')
        assert found.get(timeout=DEADLINE_S) == EVERYTHING
    finally:
        stop.set()
        thread.join(DEADLINE_S)


def test_changes_is_immutable() -> None:
    changes = Changes(frozenset({"writer"}))
    with pytest.raises(AttributeError):
        changes.everything = True  # type: ignore[misc]


def sleeps(thread_id: int) -> int:
    """How many times a thread of this process went to sleep (each wake-up ends one)."""
    status = Path(f"/proc/self/task/{thread_id}/status").read_text()
    return int(status.split("voluntary_ctxt_switches:")[1].split()[0])


def test_a_watch_sleeps_until_something_changes(watcher: Recorder, data_dir: Path) -> None:
    """inotify pushes events, so nothing needs looking for: right after a change, when the next
    one is likeliest, the watching thread wakes only to look at its stop flag. (Looking every
    few milliseconds, it woke hundreds of times a second.) A busy machine only makes it wake
    less often, never more."""
    draft(data_dir, "writer", "qi-1.json")
    watcher.until(touches("writer"))
    before, began = sleeps(watcher.thread_id), time.monotonic()
    time.sleep(1.0)  # the measurement itself: a second with nothing happening
    rate = (sleeps(watcher.thread_id) - before) / (time.monotonic() - began)
    assert rate <= 3 * 1000 / STOP_LOOK_MS, f"the watcher woke {rate:.0f} times a second"


def make_folders(leaves: list[Path]) -> None:
    for leaf in leaves:
        leaf.mkdir(parents=True)


def test_a_tree_made_while_the_watch_starts_is_watched_whole(tmp_path: Path) -> None:
    """`mkdir -p` of deep folders racing the watch's start: a file written afterwards in the
    deepest folder of each is reported, whichever folders were made before the watch saw them."""
    agents = {f"w{number}" for number in range(8)}
    for attempt in range(10):
        data = tmp_path / f"attempt-{attempt}" / "_data"
        (data / "inbox").mkdir(parents=True)
        leaves = [data / "agents" / agent / "queue" / "a" / "b" / "c" for agent in sorted(agents)]
        maker = threading.Thread(target=make_folders, args=(leaves,))
        maker.start()
        recorder = Recorder(data, debounce_ms=400)
        try:
            assert recorder.next() == EVERYTHING
            maker.join()
            # Once the marker is reported, so are the folders made before it: later batches
            # name only what the files below write.
            (data / "inbox" / "marker.json").write_text("{}\n")
            recorder.until(lambda b: b.inbox)
            for leaf in leaves:
                (leaf / "qi-1.json").write_text("{}\n")
            recorder.until_named(agents)
        finally:
            recorder.close()


def folders_below(top: Path) -> set[str]:
    """Every folder below top and itself, not counting links to folders."""
    found = {str(top)}
    for root, names, _ in os.walk(top):
        found |= {str(Path(root) / n) for n in names if not (Path(root) / n).is_symlink()}
    return found


def test_every_folder_is_watched_however_the_tree_changes(tmp_path: Path) -> None:
    """The watch follows the tree: folders made as it starts, made later, moved within it,
    moved out and deleted; a link loop is watched once."""
    data = tmp_path / "_data"
    (data / "agents").mkdir(parents=True)
    (data / "agents" / "loop").symlink_to(data / "agents")
    leaves = [data / "agents" / f"w{number}" / "queue" / "x" for number in range(20)]
    maker = threading.Thread(target=make_folders, args=(leaves,))
    maker.start()
    with TreeWatch(str(data)) as tree:
        maker.join()

        def follows() -> bool:
            tree.changes()
            return tree.watched() == folders_below(data)

        wait_for(follows, what="the folders made as the watch started")
        (data / "agents" / "w1").rename(data / "agents" / "renamed")
        (data / "agents" / "w2").rename(tmp_path / "moved-out")
        shutil.rmtree(data / "agents" / "w3")
        (data / "agents" / "new" / "queue").mkdir(parents=True)
        wait_for(follows, what="the folders moved, deleted and made")
        assert str(data / "agents" / "renamed" / "queue" / "x") in tree.watched()


def test_inotify_changes_are_numbered_as_watchfiles_numbers_them() -> None:
    assert tuple(int(change) for change in (Change.added, Change.modified, Change.deleted)) == (
        inotify.ADDED,
        inotify.MODIFIED,
        inotify.DELETED,
    )


def test_a_file_written_in_a_renamed_agent_folder_names_the_new_name(
    watcher: Recorder, data_dir: Path
) -> None:
    (data_dir / "agents" / "writer").rename(data_dir / "agents" / "author")
    watcher.until_named({"writer", "author"})
    (data_dir / "inbox" / "ratings" / "marker.json").write_text("{}\n")
    watcher.until(lambda b: b.inbox)  # the rename's batches are all in
    draft(data_dir, "author", "qi-after.json")
    batches = watcher.until(touches("author"))
    assert all("writer" not in b.agents for b in batches)


def test_events_lost_to_a_full_kernel_queue_are_said(tmp_path: Path) -> None:
    """More events than the kernel keeps for a reader (fs.inotify.max_queued_events) before it
    reads: the watch says events were lost, and the watcher then watches anew (everything)."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    with TreeWatch(str(tmp_path)) as tree:
        for number in range(limit // 2 + 1):  # each: created, closed after writing
            os.close(os.open(tmp_path / f"f{number}", os.O_CREAT | os.O_WRONLY))
        assert tree.lost is None
        tree.changes()
        assert tree.lost == "the kernel's queue of file events overflowed"

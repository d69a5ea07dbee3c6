"""A draft written slowly into queue/ is committed whole: it settles (daemon.settle_ms) before its
first commit, as a decided file does, so half of it is never taken for the original."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.daemon_kit import DaemonProcess, NotifyListener, committed, wait_for
from tests.workspace_kit import Site

# Each draft as a slow editor saves it: in three chunks, each of which leaves valid text.
CHUNKS = {
    "m1.md": ["---\ntitle: Original\n---\nOriginal b", "ody, written", " in three goes.\n"],
    "y1.yaml": ["contentData:\n  title: Original\n  body:", " Original body", " of y1\n"],
}
PAUSE_S = 0.3  # between chunks: shorter than settle_ms


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


def first_committed(site: Site, rel: str) -> str:
    """The file as the commit that added it holds it."""
    adding = site.git("log", "--diff-filter=A", "--format=%H", "--", rel).split()
    assert adding, f"{rel} was never committed"
    return site.git("show", f"{adding[-1]}:{rel}")


@pytest.mark.slow
def test_a_draft_written_in_chunks_is_committed_whole_and_approved_as_written(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    site.configure("daemon:\n  settle_ms: 1000\n")
    queue = site.agent("w") / "queue"
    queue.mkdir(parents=True)
    daemon = start(site, listener)
    daemon.wait_ready()
    writers = {name: open(queue / name, "w") for name in CHUNKS}  # noqa: SIM115
    try:
        for chunk in range(3):
            if chunk:
                time.sleep(PAUSE_S)  # the editor is still busy: the daemon must not commit yet
            for name, writer in writers.items():
                writer.write(CHUNKS[name][chunk])
                writer.flush()
    finally:
        for writer in writers.values():
            writer.close()
    for name in CHUNKS:
        rel = f"_data/agents/w/queue/{name}"
        wait_for(lambda rel=rel: site.git("ls-files", rel).strip(), what=f"{name}'s commit")
        assert first_committed(site, rel) == "".join(CHUNKS[name])
    (site.agent("w") / "approved").mkdir(exist_ok=True)  # made by the agent's first commit
    for name in CHUNKS:  # approved exactly as drafted
        (queue / name).rename(site.agent("w") / "approved" / name)
        item = name.split(".")[0]
        wait_for(lambda i=item: committed(site, f"approve(w): {i}"), what=f"{item}'s approval")
    for item in ("m1", "y1"):
        assert committed(site, f"approve(w): {item}, no corrections"), site.git("log")
    assert site.feedback("w") == []

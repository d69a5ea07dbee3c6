"""A named pipe (or anything else that is not a plain file) where feedbackd reads one of the
workspace's files is never opened as a file: a plain open would wait for a writer forever, and
the server's worker thread, or the command, with it. It answers, and says which file is wrong."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_kit import DEADLINE_S
from tests.web_kit import Server, serving
from tests.workspace_kit import Site, draft

# Files of an agent that the panel, the API or the commands read, each made a pipe in turn.
PIPES = [
    "prompt/feedback.md",
    "prompt/skills/summarise.md",
    "pricing.jsonl",
    "memory/facts.jsonl",
    "ratings/summarise/2026-12.jsonl",
    "feedback.json",
    "decisions.jsonl",
]
ROUTES = [
    "/api/agents",
    "/api/agents/writer",
    "/api/agents/writer/prompt",
    "/api/agents/writer/queue",
    "/agents/writer",
    "/api/feedback/summarise",
    "/api/reputation/writer",
    "/api/status",
    "/api/agents/writer/stats",
]
RATING = (
    '{"transaction_id": "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", "provider_agent": "writer",'
    ' "skill_id": "summarise", "rating": 5, "requester_agent": "buyer-1",'
    ' "timestamp": "2026-12-01T10:00:00.000Z"}\n'
)


def _within_deadline(pipe: Path, call: Callable[[], Any]) -> Any:
    """call()'s value, or a failure when it is still waiting after the deadline: the pipe is
    then opened for writing and closed until the call returns, so that a reader stuck on it
    gets an end of file and the test ends."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(call()), daemon=True)
    worker.start()
    worker.join(DEADLINE_S)
    stuck = worker.is_alive()
    while worker.is_alive():
        with contextlib.suppress(OSError):  # ENXIO: nobody reads it at this instant
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(0.05)
    assert not stuck, f"still waiting on the pipe {pipe.name} after {DEADLINE_S:g} s"
    return result[0] if result else None


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "site")
    site.write("writer", "qi-1.json", draft({"title": "Old"}))
    site.reconcile()
    site.move("writer", "qi-1.json", "approved")
    site.reconcile()
    return site


def _make_pipe(site: Site, name: str) -> Path:
    pipe = site.agent("writer") / name
    pipe.parent.mkdir(parents=True, exist_ok=True)
    if pipe.exists():
        pipe.unlink()
    os.mkfifo(pipe)
    return pipe


@pytest.mark.parametrize("name", PIPES)
def test_the_server_answers_beside_a_pipe(site: Site, name: str) -> None:
    (site.agent("writer") / "ratings" / "summarise").mkdir(parents=True)
    (site.agent("writer") / "ratings" / "summarise" / "2026-11.jsonl").write_text(RATING)
    pipe = _make_pipe(site, name)
    with serving(site.root) as client:
        for route in ROUTES:
            answer = _within_deadline(pipe, lambda route=route: client.get(route))
            assert answer.status != 500 or answer.json()["error"] != "internal", (route, answer)
            assert str(site.root) not in answer.text, route


def test_the_prompt_command_says_the_snippet_is_no_file(site: Site) -> None:
    pipe = _make_pipe(site, "prompt/feedback.md")
    done = _within_deadline(pipe, lambda: site.cli("prompt", "writer"))
    assert done.returncode == 1, done.stderr
    assert "_data/agents/writer/prompt/feedback.md: not a plain file" in done.stderr


COMMANDS = [
    ["status"],
    ["doctor"],
    ["memory", "writer"],
    ["recent", "writer"],
    ["stats", "writer"],
    ["reputation", "writer"],
    ["run", "--once"],
]


@pytest.mark.parametrize("name", PIPES)
def test_the_commands_answer_beside_a_pipe(site: Site, name: str) -> None:
    pipe = _make_pipe(site, name)
    for command in COMMANDS:
        done = _within_deadline(pipe, lambda command=command: site.cli(*command))
        assert done.returncode in (0, 1), (command, done.stderr)
        assert "Traceback" not in done.stderr, (command, done.stderr)


@pytest.mark.slow
def test_serve_answers_and_stops_beside_a_pipe(site: Site) -> None:
    pipe = _make_pipe(site, "prompt/feedback.md")
    server = Server(site.root)
    try:
        answer = _within_deadline(pipe, lambda: server.get("/api/agents/writer/prompt"))
        assert answer.json()["error"] == "workspace_error", answer.text
        assert "prompt/feedback.md: not a plain file" in answer.json()["message"]
        assert server.stop() == 0
    finally:
        server.close()

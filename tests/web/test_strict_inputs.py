"""What `serve` and the commands refuse, and how: a Host header parsed strictly, a curator whose
name could pass for markup, an agent linked out of the workspace (its export too), and errors
that quote a cut of what was sent, naming no folder of the server's disk, not even the one the
configuration file was given from (SPEC section 12)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn

from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.websafety import ListenAddress, host_allowed, parse_listen
from feedbackd.web.connections import Connections
from feedbackd.web.server import GRACE_S, application
from feedbackd.web.stopping import GracefulServer
from tests.web_kit import Client, serving, uvicorn_in_thread
from tests.workspace_kit import Site, draft

LISTEN = ListenAddress("127.0.0.1", 8788)
EVIL_CURATOR = 'Evil" onmouseover="alert(1)" x=" <e@x.org>'
LONG = 60_000


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "site")
    site.write("writer", "qi-1.json", draft({"title": "Old"}))
    site.reconcile()
    return site


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:80@evil.com",
        "[::1]evil",
        "[::1]:8788evil",
        "localhost:evil",
        "localhost:8788:8788",
        "127.0.0.1:-1",
        "localhost:123456",
        "local host",
        "localhost/evil",
        "[evil.com]",
        "[::1",
    ],
)
def test_a_host_header_that_is_not_a_host_and_port_is_refused(host: str) -> None:
    assert not host_allowed(host, LISTEN)


@pytest.mark.parametrize("host", ["127.0.0.1:8788", "localhost", "[::1]:8788", "LOCALHOST."])
def test_a_host_and_port_pass(host: str) -> None:
    assert host_allowed(host, LISTEN)


def test_the_server_refuses_a_host_with_a_tail(site: Site) -> None:
    with serving(site.root) as client:
        answer = client.get("/api/agents", headers={"Host": "127.0.0.1:80@evil.com"})
    assert answer.status == 421, answer.text


def test_a_curator_name_with_quotes_is_refused_everywhere(site: Site) -> None:
    queued = site.agent("writer") / "queue" / "qi-1.json"
    with serving(site.root) as client:
        answer = client.post("/api/agents/writer/queue/qi-1/approve", {"curator": EVIL_CURATOR})
    assert answer.status == 400, answer.text
    done = site.cli("approve", "writer", "qi-1", "--curator", EVIL_CURATOR)
    assert done.returncode == 1 and "--curator" in done.stderr, done.stderr
    assert queued.exists()
    # In the draft itself: the daemon's pass refuses it as a curator, and commits nothing by it.
    site.write("writer", "qi-2.json", draft({"title": "Old"}, curator=EVIL_CURATOR))
    site.reconcile()
    site.move("writer", "qi-2.json", "approved")
    site.reconcile()
    assert "onmouseover" not in site.git("log", "--all", "--format=%an %ae %cn")


def test_errors_quote_a_cut_of_a_long_input(site: Site) -> None:
    long = "9" * LONG
    with serving(site.root) as client:
        answers = [
            client.get(f"/api/agents/writer/stats?since={long}"),
            client.get(f"/api/log?since={long}"),
            client.get(f"/api/agents/writer/export?format=openai-sft&at=x{long}"),
            client.post(
                "/api/agents/writer/queue/qi-1/approve", {"curator": f"{'a' * 100_000} <e@x"}
            ),
            client.post("/api/agents/writer/queue/qi-1/reject", {"notes": "no", "curator": long}),
        ]
    for answer in answers:
        assert 400 <= answer.status < 500, answer.text[:300]
        assert len(answer.body) < 1_000, answer.text[:300]
    done = site.cli("prompt", "writer", "--at", f"x{long}")
    assert done.returncode in (1, 2) and len(done.stderr) < 1_000, done.stderr[:300]


def test_the_export_of_an_agent_linked_outside_is_not_found(site: Site, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "approved").mkdir(parents=True)
    (outside / "approved" / "qi-9.json").write_text(json.dumps(draft({"title": "Secret"})))
    site.agent("elsewhere").symlink_to(outside, target_is_directory=True)
    with serving(site.root) as client:
        answer = client.get("/api/agents/elsewhere/export?format=openai-sft")
    assert answer.status == 404 and answer.json()["error"] == "not_found", answer.text
    done = site.cli("export", "elsewhere", "--format", "openai-sft")
    assert done.returncode == 1 and "not_found" in done.stderr, done.stderr


@contextmanager
def serving_with_config(root: Path, config: Path) -> Iterator[Client]:
    """web_kit.serving, with `--config` naming a file outside the workspace."""
    runtime = Runtime.open(str(root), str(config))

    def server_for(port: int) -> uvicorn.Server:
        listen = parse_listen(f"127.0.0.1:{port}", "--listen")
        app, stopping = application(runtime, str(config), listen)
        protocol = Connections(runtime.settings.http.max_connections).protocol()
        settings = uvicorn.Config(app, http=protocol, log_config=None, lifespan="off")
        return GracefulServer(settings, stopping, GRACE_S)

    with uvicorn_in_thread(server_for) as running:
        yield Client(running.port)


def test_a_config_outside_the_workspace_is_named_without_its_folder(
    site: Site, tmp_path: Path
) -> None:
    config = tmp_path / "private" / "settings" / "feedbackd.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("daemon:\n  settle_ms: 100\n")
    with serving_with_config(site.root, config) as client:
        assert client.get("/api/agents").status == 200
        config.write_text("daemon:\n  settle_ms: [\n")
        answers = [
            client.get("/api/agents"),
            client.get("/agents/writer", headers={"Accept": "text/html"}),
        ]
    assert answers[0].json()["error"] == "config_error"
    for answer in answers:
        assert answer.status == 500 and "feedbackd.yaml (line 3" in answer.text, answer.text
        assert str(tmp_path) not in answer.text and "private" not in answer.text, answer.text

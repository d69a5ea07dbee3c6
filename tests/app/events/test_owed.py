"""What each hook is owed, read from a real workspace's history and sent to a real receiver on
127.0.0.1: every decision once, in commit order, signed; the state rebuilt from `git log` when
it is lost, never reaching back before the hook's configuration; with two clones of one remote,
each commit sent by the clone that made it."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from feedbackd.app.daemon.runonce import run_once
from feedbackd.app.events.delivery import deliver_due
from feedbackd.app.events.owed import refresh, state_path
from feedbackd.app.reconcile import reconcile_all
from feedbackd.edges.clock import utcnow
from tests.events_kit import SECRET, configure_hook, hook_config, receiving
from tests.workspace_kit import Site, draft

AGENT = "writer"


def decide(site: Site, n: int, to: str = "approved") -> None:
    """A draft committed, then decided (the agent's pass makes each a commit of its own)."""
    site.write(AGENT, f"qi-{n}.json", draft({"title": f"Title {n}"}, rejectionFeedback="meh"))
    site.reconcile()
    site.move(AGENT, f"qi-{n}.json", to)
    site.reconcile()


def configured(site: Site, url: str, **options: object) -> None:
    configure_hook(site.root, url, **options)
    site.git("add", "feedbackd.yaml")
    site.git("commit", "-qm", "Send events to the team's hook")


def deliver(site: Site) -> None:
    refresh(site.runtime(), utcnow())
    deliver_due(site.runtime(), threading.Event(), now_too=True)


def owed(site: Site) -> list[str]:
    hooks = refresh(site.runtime(), utcnow()).hooks.values()
    return [event.type for hook in hooks for event in hook.owed]


def delivered(receiver_bodies: list[bytes]) -> list[tuple[str, str]]:
    docs = [json.loads(body) for body in receiver_bodies]
    return [(doc["type"], doc["data"]["item"]) for doc in docs]


def test_each_decision_is_sent_once_in_commit_order_and_signed(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    with receiving() as receiver:
        configured(site, receiver.url)
        deliver(site)  # the hook starts here: nothing is owed yet
        decide(site, 1)
        decide(site, 2, "rejected")
        assert owed(site) == ["approve", "reject"]
        deliver(site)
        deliver(site)
        assert delivered(receiver.bodies()) == [
            ("feedbackd.approve", "qi-1"), ("feedbackd.reject", "qi-2"),
        ]  # fmt: skip
        for got in receiver.received:
            Webhook(SECRET).verify(got.body, got.headers)
        decisions = site.git("log", "-E", "--grep=^(approve|reject)", "--reverse", "--format=%H")
        assert receiver.ids() == decisions.split()
        assert owed(site) == []


def test_a_receiver_that_fails_holds_the_later_events_until_it_answers(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    with receiving() as receiver:
        configured(site, receiver.url)
        deliver(site)
        receiver.mode = "fail"
        decide(site, 1)
        decide(site, 2)
        deliver(site)
        state = json.loads(state_path(site.runtime()).read_text())["hooks"][0]
        assert len(state["owed"]) == 2 and "HTTP 500" in state["last_error"]
        assert site.cli("status", "--json").returncode == 0
        status = json.loads(site.cli("status", "--json").stdout)["events"]
        assert status["owed"] == 2 and "HTTP 500" in status["last_error"]
        receiver.mode = "ok"
        deliver(site)
        items = [item for _, item in delivered(receiver.bodies())]
        assert items == ["qi-1", "qi-1", "qi-2"]  # the failed attempt, then both in order


def test_a_lost_state_is_rebuilt_from_the_history_since_the_configuration(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    decide(site, 1)  # before any hook: never sent
    with receiving() as receiver:
        configured(site, receiver.url)
        decide(site, 2)
        decide(site, 3)
        deliver(site)
        state_path(site.runtime()).unlink()
        assert owed(site) == ["approve", "approve"]  # qi-2 and qi-3 again, never qi-1
        state_path(site.runtime()).write_text("{not json")
        deliver(site)
        assert [item for _, item in delivered(receiver.bodies())] == ["qi-2", "qi-3"] * 2


def test_a_hook_no_commit_configured_starts_at_head_when_rebuilt(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    with receiving() as receiver:
        configure_hook(site.root, receiver.url)  # not committed
        decide(site, 1)
        assert owed(site) == []


def test_a_hook_asks_for_some_events_only(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    with receiving() as receiver:
        configured(site, receiver.url, events="reject")
        owed(site)
        decide(site, 1)
        decide(site, 2, "rejected")
        assert owed(site) == ["reject"]


def test_events_replay_sends_a_range_again(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    with receiving() as receiver:
        configured(site, receiver.url)
        start = site.git("rev-parse", "HEAD").strip()
        owed(site)
        decide(site, 1)
        decide(site, 2)
        deliver(site)
        done = site.cli("events", "replay", "--hook", receiver.url, "--since", start, "--json")
        assert done.returncode == 0, done.stderr
        assert len(json.loads(done.stdout)["replayed"]) == 2
        assert [item for _, item in delivered(receiver.bodies())] == ["qi-1", "qi-2"] * 2
        listed = json.loads(site.cli("events", "--json").stdout)
        assert listed["owed"] == 0 and listed["hooks"][0]["delivered"] == 4
        unknown = site.cli("events", "replay", "--hook", "https://nope/x", "--since", start)
        assert unknown.returncode == 1 and "not_found" in unknown.stderr


HOOK = (
    "events:\n  webhooks:\n    - url: {url}\n      secret_file: {secret}\n"
    "      events: [{events}]\n"
)


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"url": "http://hooks.example.com/x"}, "line 3: bad value for `events.webhooks.0.url`"),
        ({"secret": "missing.secret"}, "line 4: bad value for `events.webhooks.0.secret_file`"),
        ({"events": "approve, publish"}, "line 5: bad value for `events.webhooks.0.events.1`"),
    ],
)
def test_bad_hook_settings_are_config_errors_naming_the_line(
    tmp_path: Path, settings: dict[str, str], says: str
) -> None:
    site = Site(tmp_path / "ws")
    (site.root / "hook.secret").write_text(SECRET)
    chosen = {"url": "http://127.0.0.1:9/x", "secret": "hook.secret", "events": "approve"}
    site.configure(HOOK.format(**{**chosen, **settings}))
    done = site.cli("events")
    assert done.returncode == 1 and "error: config_error:" in done.stderr
    assert says in done.stderr


def test_a_short_secret_is_a_config_error(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    site.configure(hook_config("http://127.0.0.1:9/x"))
    (site.root / "hook.secret").write_text("whsec_c2hvcnQ=\n")
    done = site.cli("events")
    assert done.returncode == 1 and "config_error" in done.stderr and "too short" in done.stderr


class Clones:
    """A bare remote and two clones of one workspace whose committed config names a hook."""

    def __init__(self, tmp: Path, url: str, deliver_to: str = "own") -> None:
        bare = tmp / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
        seed = Site(tmp / "seed")
        extra = f"  deliver: {deliver_to}\ngit:\n  remote: origin\n"
        configured(seed, url, extra=extra)
        seed.git("remote", "add", "origin", str(bare))
        seed.git("push", "-q", "origin", "main")
        self.a, self.b = (self._clone(bare, tmp / name) for name in ("a", "b"))

    @staticmethod
    def _clone(bare: Path, root: Path) -> Site:
        subprocess.run(["git", "clone", "-q", str(bare), str(root)], check=True)
        (root / "hook.secret").write_text(SECRET)
        site = Site(root)
        site.git("config", "user.name", root.name)
        return site


def sync(site: Site) -> None:
    run_once(site.runtime())


def test_with_two_clones_each_commit_is_sent_by_the_clone_that_made_it(tmp_path: Path) -> None:
    with receiving() as receiver:
        clones = Clones(tmp_path, receiver.url)
        for site in (clones.a, clones.b):
            sync(site)
            owed(site)
        decide(clones.a, 1)
        sync(clones.a)
        decide(clones.b, 2)
        sync(clones.b)  # pulls qi-1, rebases qi-2 onto it, pushes
        sync(clones.a)  # pulls qi-2
        assert [item for item in _owed_items(clones.a)] == ["qi-1"]
        assert [item for item in _owed_items(clones.b)] == ["qi-2"]


def test_with_deliver_all_every_clone_sends_every_commit(tmp_path: Path) -> None:
    with receiving() as receiver:
        clones = Clones(tmp_path, receiver.url, deliver_to="all")
        for site in (clones.a, clones.b):
            sync(site)
            owed(site)
        decide(clones.a, 1)
        sync(clones.a)
        sync(clones.b)
        assert _owed_items(clones.b) == ["qi-1"]


def _owed_items(site: Site) -> list[str | None]:
    hooks = refresh(site.runtime(), utcnow()).hooks.values()
    return [event.data["item"] for hook in hooks for event in hook.owed]


def test_reviews_and_disputes_are_events_of_their_own(tmp_path: Path) -> None:
    """Where two curators review each draft, a hook hears each review and the dispute (SPEC
    sections 15 and 17), named for the curator who made it, and no decision: none was made."""
    site = Site(tmp_path / "ws")
    with receiving() as receiver:
        configure_hook(site.root, receiver.url, extra="review:\n  required: 2\n")
        site.git("add", "feedbackd.yaml")
        site.git("commit", "-qm", "Two curators; send events to the team's hook")
        deliver(site)
        site.write(AGENT, "qi-1.json", draft({"title": "Title"}))
        site.reconcile()
        site.move(AGENT, "qi-1.json", "approved")
        reconcile_all(site.runtime("Ada <ada@example.org>"))
        doc = json.loads((site.agent(AGENT) / "review" / "qi-1.json").read_text())
        site.write(AGENT, "qi-1.json", {**doc, "rejectionFeedback": "Off topic."}, "review")
        site.move(AGENT, "qi-1.json", "rejected", source="review")
        reconcile_all(site.runtime("Bo <bo@example.org>"))
        deliver(site)
        docs = [json.loads(body) for body in receiver.bodies()]
    assert [(d["type"], d["data"]["item"], d["data"]["curator"]) for d in docs] == [
        ("feedbackd.review", "qi-1", "Ada <ada@example.org>"),
        ("feedbackd.dispute", "qi-1", "Bo <bo@example.org>"),
    ]
    assert docs[1]["data"]["subject"] == "dispute(writer): qi-1 (approve 1, reject 1)"

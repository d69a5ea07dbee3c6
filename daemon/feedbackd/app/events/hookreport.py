"""`feedbackd events [--json]` and `events replay`: each hook's state, and a range sent again;
the owed count and last error that `status` and `/metrics` show."""

from __future__ import annotations

import threading
from typing import Any

from feedbackd.app.events.delivery import deliver_due
from feedbackd.app.events.owed import events_since, hooks_of, outbox_of, refresh, state_path
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.config import WebhookSettings
from feedbackd.core.errors import NotFound
from feedbackd.core.events.outbox import HookState, Outbox
from feedbackd.edges.clock import utcnow
from feedbackd.edges.events.statefile import read_state
from feedbackd.edges.instance import daemon_running

SHOWN_OWED = 20  # the first owed commits a hook's report names


def events_report(runtime: Runtime) -> dict[str, Any]:
    """Every configured hook: what it asks for, its last delivery, what it is owed, its last
    error. Brought up to date from the history first, so it is true with no daemon running."""
    box = refresh(runtime, utcnow()) if hooks_of(runtime) else Outbox()
    hooks = [_hook_json(hook, box.hooks.get(hook.url)) for hook in hooks_of(runtime)]
    return {"hooks": hooks, **_totals(box)}


def events_summary(runtime: Runtime) -> dict[str, Any]:
    """`status`'s view: the owed count and the newest error, from the state as it stands."""
    doc = read_state(state_path(runtime)) if hooks_of(runtime) else None
    try:
        # Read without the lock: the file is replaced whole, and `status` never waits on it.
        return _totals(Outbox.from_json(doc) if doc is not None else Outbox())
    except ValueError:
        return {"owed": None, "last_error": "the events state is damaged; it is rebuilt soon"}


def _totals(box: Outbox) -> dict[str, Any]:
    failing = [hook for hook in box.hooks.values() if hook.last_error and hook.attempts]
    error = f"{failing[0].url}: {failing[0].last_error}" if failing else None
    return {"owed": box.owed_count(), "last_error": error}


def _hook_json(hook: WebhookSettings, state: HookState | None) -> dict[str, Any]:
    owed = state.owed if state is not None else ()
    return {
        "url": hook.url,
        "events": list(hook.events) if hook.events is not None else None,
        "owed": len(owed),
        "owed_commits": [event.commit for event in owed[:SHOWN_OWED]],
        "last_delivery": state.last_delivery if state else None,
        "last_error": state.last_error if state else None,
        "attempts": state.attempts if state else 0,
        "next_attempt_at": state.next_at if state and owed else None,
        "delivered": state.delivered if state else 0,
        "given_up": state.given_up if state else 0,
        "configured_at": state.configured_at if state else None,
    }


def replay(runtime: Runtime, url: str, since: str) -> dict[str, Any]:
    """Owe the hook the events since `since` again; with no daemon running, send them now."""
    hook = next((h for h in hooks_of(runtime) if h.url == url), None)
    if hook is None:
        known = ", ".join(h.url for h in hooks_of(runtime)) or "none configured"
        raise NotFound(f"no hook with the url {url}", hint=f"configured hooks: {known}")
    events = events_since(runtime, hook, since, utcnow())
    refresh(runtime, utcnow())
    with outbox_of(runtime) as box:
        state = box[0].hooks[url]
        box[0] = box[0].with_hook(state.replaying(events))
    if not daemon_running(runtime.workspace.state_dir):
        deliver_due(runtime, threading.Event(), only=url, now_too=True)
    report = events_report(runtime)
    shown = next(h for h in report["hooks"] if h["url"] == url)
    return {"hook": url, "replayed": [event.commit for event in events], **shown}

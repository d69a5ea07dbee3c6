"""Sending what each hook is owed: oldest first, one event at a time, each signed as Standard
Webhooks asks. A failure waits for its backoff before the hook is tried again, so the events
after it wait too (commit order per hook). The daemon runs this in a thread of its own
(`DeliveryThread`) beside its passes: a receiver that is down or slow costs that thread its
wait, never a decision. `feedbackd serve` never delivers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from feedbackd.app.events.owed import hooks_of, outbox_of, refresh
from feedbackd.app.workspace.runtime import Runtime, read_secret_file
from feedbackd.core.config import WebhookSettings
from feedbackd.core.events.messages import Event
from feedbackd.core.events.outbox import Outbox
from feedbackd.core.events.signing import parse_secret, signature
from feedbackd.edges.clock import utcnow
from feedbackd.edges.events.posting import Answer, post
from feedbackd.edges.git.batch import GitBatchKeeper

log = logging.getLogger("feedbackd")

LOOK_S = 2.0  # how soon a commit the daemon was not told of (a command's) is found
ERROR_WAIT_S = 5.0  # after an unexpected failure of the thread's own work
# After the daemon tells of a commit, the thread waits for a pause in the decisions (QUIET_S
# without another), QUIET_MAX_S at most, before it reads the history: during a burst its git
# processes and writes would compete with the passes' for the machine.
QUIET_S = 0.3
QUIET_MAX_S = 2.0
# The thread's niceness (and its git children's, which inherit it): the passes go first.
NICENESS = 10


def send(runtime: Runtime, hook: WebhookSettings, event: Event) -> Answer:
    """One attempt at one event, signed with the hook's secret as it is now on disk."""
    folder = (runtime.config_file or runtime.workspace.root / "feedbackd.yaml").parent
    try:
        key = parse_secret(read_secret_file(folder / Path(hook.secret_file).expanduser()))
    except (OSError, ValueError) as error:
        return Answer(False, None, f"secret file {hook.secret_file}: {error}")
    body = event.body()
    timestamp = int(utcnow().timestamp())
    headers = {
        "webhook-id": event.commit,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(key, event.commit, timestamp, body),
    }
    return post(hook.url, body, headers, hook.timeout_s)


def deliver_due(
    runtime: Runtime, stop: threading.Event, *, only: str | None = None, now_too: bool = False
) -> None:
    """Send each hook's due events in order until one fails, none is owed, or `stop` is set.
    `now_too`: without waiting for a backoff (a replay the user asked for)."""
    for hook in hooks_of(runtime):
        if only is None or hook.url == only:
            while not stop.is_set() and _deliver_next(runtime, hook, now_too):
                pass


def _deliver_next(runtime: Runtime, hook: WebhookSettings, now_too: bool) -> bool:
    """One attempt at the hook's first owed event, if it is due; True when it was delivered."""
    with outbox_of(runtime) as box:
        state = box[0].hooks.get(hook.url) if box else None
    if state is None or not state.owed or not (now_too or state.due(utcnow())):
        return False
    event = state.owed[0]
    answer = send(runtime, hook, event)
    retry_hours = runtime.settings.events.retry_hours
    with outbox_of(runtime) as box:
        current = box[0].hooks.get(hook.url) if box else None
        if current is None or not current.owed or current.owed[0].commit != event.commit:
            return False  # changed meanwhile (a replay, a reconfiguration): looked at again
        if answer.ok:
            box[0] = box[0].with_hook(current.succeeded(utcnow(), answer.status or 200))
        else:
            box[0] = box[0].with_hook(current.failed(utcnow(), answer.error or "", retry_hours))
    if answer.ok:
        log.info("events: %s %s delivered to %s", event.type, event.commit[:12], hook.url)
    else:
        log.warning("events: %s to %s failed: %s", event.commit[:12], hook.url, answer.error)
    return answer.ok


def next_wait(box: Outbox, now: datetime) -> float:
    waits = [hook.seconds_until_due(now) for hook in box.hooks.values()]
    return min([LOOK_S, *(wait for wait in waits if wait is not None)])


class DeliveryThread:
    """The daemon's deliveries, in a thread that runs while hooks are configured."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = self._own(runtime)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def _own(runtime: Runtime) -> Runtime:
        # git's long-lived helpers serve one thread: the passes keep theirs, this its own.
        return replace(runtime, git_helpers=GitBatchKeeper())

    def start(self) -> None:
        """Start delivering, if hooks are configured and it does not run already."""
        if self._thread is None and hooks_of(self.runtime) and not self._stop.is_set():
            self._thread = threading.Thread(target=self._run, name="feedbackd-events", daemon=True)
            self._thread.start()

    def reconfigured(self, runtime: Runtime) -> None:
        self.runtime = self._own(runtime)
        self.start()
        self.poke()

    def poke(self) -> None:
        """Commits were made: look for them now."""
        self._wake.set()

    def stop(self, grace_s: float) -> None:
        """Stop after the attempt in flight (which its own deadline bounds), waiting `grace_s`
        at most; what is owed stays owed in the state file."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(grace_s)

    def _run(self) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: one thread's own priority
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICENESS)
        while not self._stop.is_set():
            wait = ERROR_WAIT_S
            try:
                refresh(self.runtime, utcnow())
                deliver_due(self.runtime, self._stop)
                with outbox_of(self.runtime) as box:
                    wait = next_wait(box[0], utcnow()) if box else LOOK_S
            except Exception:  # a bug or a full disk must not end the deliveries for good
                log.exception("events: delivery failed; trying again in %g s", wait)
            if self._wake.wait(wait):
                self._quiet()
            self._wake.clear()

    def _quiet(self) -> None:
        """Wait until the daemon has told of no commit for QUIET_S (QUIET_MAX_S at most)."""
        until = time.monotonic() + QUIET_MAX_S
        while not self._stop.is_set() and time.monotonic() < until:
            self._wake.clear()
            if not self._wake.wait(QUIET_S):
                return

"""What each hook is owed, kept in `.feedbackd/events/state.json` and brought up to date from
git: the commits that reached the branch since the last look become events owed to each hook
that asks for them, in commit order.

When the state is lost (removed, damaged), it is rebuilt from `git log`: each hook is owed again
every event since the commit that added its url to the configuration (never an older one); a
receiver drops repeats by `webhook-id`. A hook whose configuration no commit holds starts at
HEAD. With `events.deliver: own` (the default) a clone owes only the commits it made itself
(edges/events/eventlog.py reads that from its reflog).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.config import WebhookSettings
from feedbackd.core.errors import FeedbackdError, GitError
from feedbackd.core.events.messages import Event, event_of
from feedbackd.core.events.outbox import HookState, Outbox
from feedbackd.core.timeutil import iso_ms, since_start
from feedbackd.edges.events import eventlog
from feedbackd.edges.events.statefile import held, read_state, write_state
from feedbackd.edges.git.repo import GitRepo

log = logging.getLogger("feedbackd")

# Reflog entries read beyond the count of new commits: a pull brings many in one entry.
_REFLOG_MARGIN = 64


def state_path(runtime: Runtime) -> Path:
    return runtime.workspace.state_dir / "events" / "state.json"


def hooks_of(runtime: Runtime) -> list[WebhookSettings]:
    return list(runtime.settings.events.webhooks) if runtime.git_enabled else []


@contextmanager
def outbox_of(runtime: Runtime) -> Iterator[list[Outbox]]:
    """The state, held until the block ends; what the block leaves in the list is written."""
    path = state_path(runtime)
    with held(path):
        doc = read_state(path)
        try:
            box = [Outbox.from_json(doc)] if doc is not None else []
        except ValueError as error:
            log.warning("events: %s; rebuilding it from the history", error)
            box = []
        loaded = box[0] if box else None
        yield box
        if box and box[0] != loaded:
            write_state(path, box[0].to_json())


def refresh(runtime: Runtime, now: datetime) -> Outbox:
    """The state with the commits that reached HEAD since the last look owed to the hooks."""
    hooks = hooks_of(runtime)
    with outbox_of(runtime) as box, open_repo(runtime) as repo:
        if repo is None:
            return Outbox()
        if not box:
            box.append(rebuilt(runtime, repo, hooks, now))
        box[0] = _caught_up(runtime, repo, box[0].configured([h.url for h in hooks], now))
        return box[0]


def rebuilt(
    runtime: Runtime, repo: GitRepo, hooks: Sequence[WebhookSettings], now: datetime
) -> Outbox:
    """The state from the history alone: each hook owed what came since its configuration."""
    head = eventlog.head(repo)
    if head is None:
        return Outbox()
    mine = _mine(runtime, repo, None)
    states = []
    for hook in hooks:
        start = _configured_in_history(runtime, repo, hook.url)
        found = eventlog.commits_between(repo, start, head) if start else []
        events = [event for event in _events(found, mine) if wants(hook, event)]
        states.append(HookState(hook.url, start or head, iso_ms(now), owed=tuple(events)))
        if events:
            log.info("events: %d owed to %s, rebuilt from the history", len(events), hook.url)
    return Outbox(head, {state.url: state for state in states})


def _caught_up(runtime: Runtime, repo: GitRepo, box: Outbox) -> Outbox:
    head = eventlog.head(repo)
    if head is None or head == box.head or not box.hooks:
        return Outbox(head, box.hooks)
    try:
        found = eventlog.commits_between(repo, box.head, head)
    except GitError as error:  # the commit read up to is gone (a reset, then a gc)
        log.warning("events: going on from HEAD: %s", error)
        return Outbox(head, box.hooks)
    events = _events(found, _mine(runtime, repo, len(found) + _REFLOG_MARGIN))
    for hook in hooks_of(runtime):
        state = box.hooks.get(hook.url)
        if state is not None:
            box = box.with_hook(state.owing(e for e in events if wants(hook, e)))
    return Outbox(head, box.hooks)


def _mine(runtime: Runtime, repo: GitRepo, limit: int | None) -> Callable[[eventlog.Commit], bool]:
    if runtime.settings.events.deliver == "all":
        return lambda commit: True
    acts = eventlog.made_here(repo, limit)
    return lambda commit: eventlog.same_act(commit) in acts


def _events(
    found: Sequence[eventlog.Commit], mine: Callable[[eventlog.Commit], bool]
) -> list[Event]:
    events = []
    for commit in found:
        event = event_of(commit.sha, commit.date, commit.author, commit.message)
        if event is not None and mine(commit):
            events.append(event)
    return events


def wants(hook: WebhookSettings, event: Event) -> bool:
    return hook.events is None or event.type in hook.events


def _configured_in_history(runtime: Runtime, repo: GitRepo, url: str) -> str | None:
    config = runtime.config_file
    root = runtime.workspace.root
    if config is None or not config.resolve().is_relative_to(root.resolve()):
        return None
    return eventlog.configured_at(
        repo, config.resolve().relative_to(root.resolve()).as_posix(), url
    )


def events_since(runtime: Runtime, hook: WebhookSettings, since: str, now: datetime) -> list[Event]:
    """`events replay`: the events of the commits after `since` (a revision, or a date: the
    commits from then on) that the hook asks for, oldest first, whichever clone made them."""
    try:
        with open_repo(runtime) as repo:
            if repo is None or eventlog.head(repo) is None:
                return []
            start = _replay_start(repo, since, now)
            head = eventlog.head(repo)
            assert head is not None
            found = eventlog.commits_between(repo, start, head)
    except GitError as error:
        raise FeedbackdError(f"cannot read the history: {error}") from None
    return [event for event in _events(found, lambda commit: True) if wants(hook, event)]


def _replay_start(repo: GitRepo, since: str, now: datetime) -> str | None:
    """The commit after which a replay starts: `since` itself as a revision, else the last
    commit before `since` as a date or a duration back from now (None: from the first commit
    on). Neither: a usage error."""
    try:
        found = eventlog.resolve(repo, since)
    except GitError:
        found = None
    if found is not None:
        return found
    moment = since_start(since, now)
    return eventlog.commit_before(repo, iso_ms(moment)) if moment is not None else None

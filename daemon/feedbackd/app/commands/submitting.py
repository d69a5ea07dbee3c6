"""`feedback submit`: one rating stored and committed, or queued for the daemon when the
workspace stays busy. Apart from actions.py, whose curation machinery a submit (the command that
buyers' agents run most) would load for nothing at every start."""

from __future__ import annotations

import logging
from pathlib import Path

from feedbackd.app.commits.locking import write_lock
from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.commits.recording import Event
from feedbackd.app.ratings import rentals
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import Busy, FeedbackdError, WriterBusy
from feedbackd.core.ids import validate_id
from feedbackd.core.wording import Progress
from feedbackd.edges.instance import daemon_running

log = logging.getLogger("feedbackd")


def submit_rating(
    runtime: Runtime, payload: str, as_agent: str | None, progress: Progress | None = None
) -> tuple[Event, list[Event]]:
    """Store and commit one rating, then apply the provider's rules (`feedback submit`);
    `progress` follows the indexing of the ratings, which a fresh clone's first one builds."""
    if as_agent is not None:
        validate_id(as_agent, "--as agent id")
    with write_lock(runtime, index_first=True), open_repo(runtime) as repo:
        return rentals.submit(runtime, repo, payload, as_agent, progress)


def submit_or_queue(
    runtime: Runtime, payload: str, as_agent: str | None, progress: Progress | None = None
) -> tuple[Event, list[Event]] | Path:
    """`feedback submit`: the rating recorded, or never lost when the workspace stays busy.

    While a daemon runs, a rating that waited as long as a command waits is left in the rating
    inbox (the path is returned) and the daemon records it as soon as it can. Without a daemon
    nobody would, so the command refuses, saying that the rating was not recorded."""
    try:
        return submit_rating(runtime, payload, as_agent, progress)
    except FeedbackdError as error:
        if not isinstance(error, Busy):
            raise
        if daemon_running(runtime.workspace.state_dir):
            queued = rentals.queue_in_inbox(runtime, payload, as_agent)
            log.warning(
                "%s; the rating is queued in %s and the daemon records it once it is free",
                error.message,
                runtime.workspace.relative(queued),
            )
            return queued
        raise WriterBusy(
            f"the rating was NOT recorded: {error.message}",
            hint="run the same `feedbackd feedback submit` again once the other writer is done"
            " (`feedbackd status` shows what it is doing)",
        ) from None

"""The daemon's heal of a git index left behind its commits, when the heal at a writer's start
failed (a full disk): tried again by itself, even when nothing else changes, so that the index
is in line soon after space is freed, and not at the next change of the workspace.
"""

from __future__ import annotations

from feedbackd.app.commits.locking import INDEX_LAGS, heal_index_left_behind, index_lags
from feedbackd.app.daemon.agentstates import GIT_INDEX, AgentStates
from feedbackd.app.workspace.problems import out_of_space
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import FeedbackdError


class IndexHealer:
    """Whether a heal is due now (`due`); its failures are kept with the agents' states, under
    GIT_INDEX: tried again as a failed pass is (every two seconds while the disk is full), and
    shown in `status` meanwhile."""

    def __init__(self, states: AgentStates) -> None:
        self.states = states
        self.due = False

    def after_pass(self, runtime: Runtime) -> None:
        """An index still marked lagging (an update, or the heal at a pass's start, failed) is
        healed next, unless a retry is set already; one that a pass's writer healed is no
        problem any more."""
        if not index_lags(runtime):
            self.states.forget(GIT_INDEX)
            self.due = False
        elif GIT_INDEX not in self.states.retry_at:
            self.due = True

    def heal(self, runtime: Runtime) -> None:
        self.due = False
        try:
            heal_index_left_behind(runtime)
        except (FeedbackdError, OSError) as error:
            message = f"{INDEX_LAGS}: {error}"
            self.states.failed(GIT_INDEX, message, disk_full=out_of_space(error))
        else:
            self.states.forget(GIT_INDEX)

"""The daemon with its webhook deliveries (app/events/) in a thread beside the passes: started
with the daemon, told of each commit, given each reloaded configuration, stopped before it ends.
A receiver that is down costs that thread its waits, never a pass a moment."""

from __future__ import annotations

from feedbackd.app.daemon.daemon import SYNC_GRACE_S, Daemon
from feedbackd.app.events.delivery import DeliveryThread
from feedbackd.app.report import Report
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.edges.notify import Notifier


class EventfulDaemon(Daemon):
    """`feedbackd run`: the daemon, and the events it owes the configured webhooks."""

    def __init__(self, runtime: Runtime, notifier: Notifier | None = None) -> None:
        super().__init__(runtime, notifier)
        self.events = DeliveryThread(self.runtime)
        self._events_runtime = self.runtime

    def _start_up(self) -> None:
        self.events.start()  # what is owed from before a restart goes out during the start-up
        super()._start_up()

    def _step(self) -> None:
        super()._step()
        if self.runtime is not self._events_runtime:  # reloaded: hooks added, changed, removed
            self._events_runtime = self.runtime
            self.events.reconfigured(self.runtime)

    def _count(self, report: Report) -> None:
        super()._count(report)
        if any(event.commit is not None for event in report.events):
            self.events.poke()

    def _shut_down(self) -> None:
        self.events.stop(SYNC_GRACE_S)  # after the attempt in flight, which its timeout bounds
        super()._shut_down()

"""`GET /metrics` in Prometheus' text format: what the daemon recorded (events by type, pending
files, problems) from its status file, and this server's requests by route and status.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from feedbackd.app.daemon.statusfile import PassTimes
from feedbackd.web.guard import ASGIApp, Receive, Scope, Send


class RequestCounter:
    """Requests by (method, route, status) and the time they took; an ASGI middleware."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._lock = threading.Lock()
        self.counts: Counter[tuple[str, str, int]] = Counter()
        self.seconds: dict[tuple[str, str], float] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)  # type: ignore[arg-type]
        finally:
            self._note(scope, status, time.perf_counter() - started)

    def _note(self, scope: Scope, status: int, seconds: float) -> None:
        route = scope.get("route")
        path = getattr(route, "path", None) or "unmatched"
        method = str(scope.get("method", ""))
        with self._lock:
            self.counts[(method, path, status)] += 1
            self.seconds[(method, path)] = self.seconds.get((method, path), 0.0) + seconds

    def lines(self) -> list[str]:
        with self._lock:
            counts, seconds = dict(self.counts), dict(self.seconds)
        out = [
            "# HELP feedbackd_http_requests_total HTTP requests answered, by route and status.",
            "# TYPE feedbackd_http_requests_total counter",
        ]
        out += [
            f'feedbackd_http_requests_total{{method="{m}",route="{_label(r)}",status="{s}"}} {n}'
            for (m, r, s), n in sorted(counts.items())
        ]
        out += [
            "# HELP feedbackd_http_request_seconds_total Time spent answering, by route.",
            "# TYPE feedbackd_http_request_seconds_total counter",
        ]
        out += [
            f'feedbackd_http_request_seconds_total{{method="{m}",route="{_label(r)}"}} {t:.6f}'
            for (m, r), t in sorted(seconds.items())
        ]
        return out


def pass_lines(passes: PassTimes | None) -> list[str]:
    """The running daemon's passes (none while no daemon runs)."""
    if passes is None:
        return []
    return [
        "# HELP feedbackd_passes_total Passes the running daemon made over changed agents.",
        "# TYPE feedbackd_passes_total counter",
        f"feedbackd_passes_total {passes.count}",
        "# HELP feedbackd_pass_seconds_total Time those passes took.",
        "# TYPE feedbackd_pass_seconds_total counter",
        f"feedbackd_pass_seconds_total {passes.seconds_total:.6f}",
        "# HELP feedbackd_pass_last_seconds How long the last pass took.",
        "# TYPE feedbackd_pass_last_seconds gauge",
        f"feedbackd_pass_last_seconds {passes.last_s:.6f}",
        "# HELP feedbackd_pass_longest_seconds The longest pass since the daemon started.",
        "# TYPE feedbackd_pass_longest_seconds gauge",
        f"feedbackd_pass_longest_seconds {passes.longest_s:.6f}",
    ]


def status_lines(state: dict[str, Any]) -> list[str]:
    """The daemon's recorded state, as `status --json` reports it."""
    counts = state.get("counts") or {}
    out = [
        "# HELP feedbackd_events_total Decisions and other events recorded, by type.",
        "# TYPE feedbackd_events_total counter",
        *(f'feedbackd_events_total{{event="{_label(e)}"}} {n}' for e, n in sorted(counts.items())),
        "# HELP feedbackd_daemon_running 1 while a daemon runs in the workspace.",
        "# TYPE feedbackd_daemon_running gauge",
        f"feedbackd_daemon_running {int(bool(state.get('running')))}",
        "# HELP feedbackd_pending_files Files waiting for a writer to finish.",
        "# TYPE feedbackd_pending_files gauge",
        f"feedbackd_pending_files {int(state.get('pending') or 0)}",
        "# HELP feedbackd_problems Problems that need a person (status lists them).",
        "# TYPE feedbackd_problems gauge",
        f"feedbackd_problems {len(state.get('problems') or [])}",
    ]
    uptime = state.get("uptime_s")
    if isinstance(uptime, int):
        out += ["# TYPE feedbackd_daemon_uptime_seconds gauge"]
        out += [f"feedbackd_daemon_uptime_seconds {uptime}"]
    return out + held_lines(state.get("agents") or {})


def held_lines(agents: dict[str, dict[str, int]]) -> list[str]:
    """Each agent's drafts waiting for more reviews (review/) or to be settled (disputed/):
    what a team alerts on when disputes pile up (SPEC section 15)."""
    return [
        "# HELP feedbackd_drafts_held Drafts waiting in review/ or disputed/, by agent.",
        "# TYPE feedbackd_drafts_held gauge",
        *(
            f'feedbackd_drafts_held{{agent="{_label(agent)}",folder="{folder}"}} {count}'
            for agent, counts in sorted(agents.items())
            for folder, count in sorted(counts.items())
        ),
    ]


def events_lines(state: dict[str, Any]) -> list[str]:
    """Webhook deliveries owed (SPEC section 17), and whether the last attempt failed."""
    events = state.get("events") or {}
    return [
        "# HELP feedbackd_webhook_deliveries_owed Events not yet delivered to the webhooks.",
        "# TYPE feedbackd_webhook_deliveries_owed gauge",
        f"feedbackd_webhook_deliveries_owed {int(events.get('owed') or 0)}",
        "# HELP feedbackd_webhook_failing 1 while a webhook's last attempt failed.",
        "# TYPE feedbackd_webhook_failing gauge",
        f"feedbackd_webhook_failing {int(bool(events.get('last_error')))}",
    ]


def learning_lines(ratios: dict[str, float | None]) -> list[str]:
    """Each agent's unedited-approval rate over the last 30 days; an agent with no approval in
    that time has no sample (a rate of nothing is no rate)."""
    return [
        "# HELP feedbackd_unedited_approval_ratio Approvals with no correction, of all"
        " approvals in the last 30 days, by agent.",
        "# TYPE feedbackd_unedited_approval_ratio gauge",
        *(
            f'feedbackd_unedited_approval_ratio{{agent="{_label(agent)}"}} {ratio:g}'
            for agent, ratio in sorted(ratios.items())
            if ratio is not None
        ),
    ]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

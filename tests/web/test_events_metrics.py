"""`/metrics` and `/api/status` show the webhook deliveries owed and whether the last attempt
failed (SPEC section 17), with no daemon running: from the events' state in `.feedbackd/`."""

from __future__ import annotations

import threading
from pathlib import Path

from feedbackd.app.events.delivery import deliver_due
from feedbackd.app.events.owed import refresh
from feedbackd.edges.clock import utcnow
from tests.events_kit import configure_hook
from tests.web_kit import serving
from tests.workspace_kit import Site, draft


def test_owed_deliveries_and_the_last_error_show_in_metrics(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    configure_hook(site.root, "http://127.0.0.1:1/down")  # nothing listens there
    site.git("add", "feedbackd.yaml")
    site.git("commit", "-qm", "hook")
    refresh(site.runtime(), utcnow())
    site.write("writer", "qi-1.json", draft({"title": "A"}))
    site.reconcile()
    site.move("writer", "qi-1.json", "approved")
    site.reconcile()
    refresh(site.runtime(), utcnow())
    deliver_due(site.runtime(), threading.Event())
    with serving(site.root) as client:
        text = client.get("/metrics").text
        status = client.get("/api/status").json()
    assert "feedbackd_webhook_deliveries_owed 1" in text
    assert "feedbackd_webhook_failing 1" in text
    assert status["events"]["owed"] == 1
    assert "connection refused" in status["events"]["last_error"]

"""Webhook signatures as the Standard Webhooks reference implementation checks them; the body a
commit makes; the backoff; what is owed, step by step."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from feedbackd.core.commitmsg import build_message
from feedbackd.core.events.messages import event_of
from feedbackd.core.events.outbox import HookState, Outbox, retry_delay
from feedbackd.core.events.signing import parse_secret, signature, url_problem
from tests.events_kit import SECRET

NOW = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)


def _approval(sha: str = "a" * 40) -> object:
    message = build_message(
        "approve", "writer", "qi-1, 1 correction (title)",
        trailers=[("Feedback-Item", "qi-1"), ("Feedback-Fields", "title")],
    )  # fmt: skip
    return event_of(sha, "2026-12-06T09:00:00+00:00", "Ann <ann@example.com>", message)


def test_a_signature_verifies_with_the_reference_implementation() -> None:
    event = _approval()
    assert event is not None
    body = event.body()  # type: ignore[attr-defined]
    stamp = int(datetime.now(UTC).timestamp())
    sign = signature(parse_secret(SECRET), "a" * 40, stamp, body)
    headers = {"webhook-id": "a" * 40, "webhook-timestamp": str(stamp), "webhook-signature": sign}
    doc = Webhook(SECRET).verify(body, headers)
    assert doc["type"] == "feedbackd.approve"
    assert doc["data"] == {
        "commit": "a" * 40, "agent": "writer", "item": "qi-1", "skill": None,
        "curator": "Ann <ann@example.com>", "fields": ["title"], "price_old": None,
        "price_new": None, "subject": "approve(writer): qi-1, 1 correction (title)",
    }  # fmt: skip
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(body + b" ", headers)


def test_drafts_and_syncs_are_no_events_reverts_are() -> None:
    draft = build_message("draft", "writer", "qi-1")
    assert event_of("b" * 40, "2026-12-06T09:00:00Z", "A <a@b>", draft) is None
    revert = (
        'Revert "approve(writer): qi-1, no corrections"\n\nThis reverts commit ' + "c" * 40 + ".\n"
    )
    event = event_of("d" * 40, "2026-12-06T09:00:00Z", "A <a@b>", revert)
    assert event is not None and event.type == "revert" and event.data["agent"] == "writer"
    own = 'Revert "tweak my notes"\n\nThis reverts commit ' + "c" * 40 + ".\n"
    assert event_of("e" * 40, "2026-12-06T09:00:00Z", "A <a@b>", own) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [("whsec_" + "QUJD", "too short"), ("abc", "starts with whsec_"), ("whsec_%%%", "base64")],
)
def test_bad_secrets_are_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_secret(text)


def test_only_https_or_loopback_http() -> None:
    assert url_problem("https://hooks.example.com/x") is None
    assert url_problem("http://127.0.0.1:9/x") is None
    assert url_problem("http://localhost/x") is None
    assert url_problem("http://[::1]:8/x") is None
    assert url_problem("http://hooks.example.com/x") is not None
    assert url_problem("ftp://127.0.0.1/x") is not None


def test_backoff_doubles_from_one_second_to_ten_minutes() -> None:
    assert [retry_delay(n) for n in range(1, 12)] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600]


def test_failures_wait_their_backoff_then_give_up_after_retry_hours() -> None:
    first, second = _approval("1" * 40), _approval("2" * 40)
    hook = HookState("https://h/x", None, "t").owing([first, second, first])  # type: ignore[list-item]
    assert [e.commit for e in hook.owed] == ["1" * 40, "2" * 40]
    hook = hook.failed(NOW, "HTTP 500", retry_hours=1)
    assert not hook.due(NOW) and hook.due(NOW + timedelta(seconds=1))
    hook = hook.failed(NOW + timedelta(seconds=1), "HTTP 500", retry_hours=1)
    assert hook.seconds_until_due(NOW + timedelta(seconds=1)) == 2
    hook = hook.failed(NOW + timedelta(hours=1), "HTTP 500", retry_hours=1)
    assert [e.commit for e in hook.owed] == ["2" * 40] and hook.given_up == 1
    assert hook.due(NOW + timedelta(hours=1))
    hook = hook.succeeded(NOW + timedelta(hours=1), 204)
    assert hook.owed == () and hook.delivered == 1 and hook.last_delivery["status"] == 204  # type: ignore[index]


def test_the_state_reads_back_as_written_and_new_hooks_start_at_its_head() -> None:
    box = Outbox("f" * 40).configured(["https://h/x"], NOW)
    assert box.hooks["https://h/x"].start == "f" * 40
    again = Outbox.from_json(json.loads(json.dumps(box.to_json())))
    assert again == box
    with pytest.raises(ValueError):
        Outbox.from_json({"format": 99})

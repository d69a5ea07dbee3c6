"""One POST against a real receiver on 127.0.0.1: a 2xx is delivered; a 500, a redirect, a
connection closed early or a receiver that takes 30 s are failed attempts, over within the
timeout, never a hang."""

from __future__ import annotations

import time

import pytest

from feedbackd.edges.events.posting import post
from tests.events_kit import receiving


def test_a_2xx_answer_is_a_delivery() -> None:
    with receiving() as receiver:
        answer = post(receiver.url, b'{"a":1}', {"webhook-id": "x"}, 5)
        assert answer.ok and answer.status == 200
        assert receiver.bodies() == [b'{"a":1}']


@pytest.mark.parametrize(("mode", "said"), [("fail", "HTTP 500"), ("redirect", "not followed")])
def test_errors_and_redirects_are_failed_attempts(mode: str, said: str) -> None:
    with receiving() as receiver:
        receiver.mode = mode
        answer = post(receiver.url, b"{}", {}, 5)
        assert not answer.ok and said in (answer.error or "")
        assert len(receiver.bodies()) == 1  # the redirect was not followed


def test_a_connection_closed_early_is_a_failed_attempt() -> None:
    with receiving() as receiver:
        receiver.mode = "close"
        answer = post(receiver.url, b"{}", {}, 5)
        assert not answer.ok and answer.error


def test_a_slow_receiver_is_cut_at_the_timeout() -> None:
    with receiving() as receiver:
        receiver.mode, receiver.slow_s = "slow", 30
        started = time.monotonic()
        answer = post(receiver.url, b"{}", {}, 1)
        assert not answer.ok and "within 1 s" in (answer.error or "")
        assert time.monotonic() - started < 20  # far from the receiver's 30 s


def test_nobody_listening_is_a_failed_attempt() -> None:
    answer = post("http://127.0.0.1:1/hook", b"{}", {}, 5)
    assert not answer.ok and answer.error == "connection refused"

"""The limit on wrong tokens, on a clock the test moves: ten a minute per address, counted over
the last minute, with the wait until the oldest of them is a minute old."""

from __future__ import annotations

from feedbackd.web import attempts
from feedbackd.web.attempts import FailedAttempts


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_eleventh_try_in_a_minute_waits_for_the_oldest_to_age() -> None:
    clock = Clock()
    limit = FailedAttempts(clock)
    for _ in range(10):
        assert limit.wait_s("192.0.2.1") is None
        limit.failed("192.0.2.1")
        clock.now += 2
    assert limit.wait_s("192.0.2.1") == 40  # the first failure, 20 s ago, ages out in 40 s
    assert limit.wait_s("192.0.2.2") is None  # another address
    clock.now += 40
    assert limit.wait_s("192.0.2.1") is None  # nine left in the window: one more try
    limit.failed("192.0.2.1")
    assert limit.wait_s("192.0.2.1") == 2


def test_an_address_whose_failures_aged_out_is_forgotten() -> None:
    clock = Clock()
    limit = FailedAttempts(clock)
    limit.failed("192.0.2.1")
    clock.now += attempts.WINDOW_S
    assert limit.wait_s("192.0.2.1") is None
    assert len(limit) == 0


def test_memory_stays_bounded_under_a_flood_of_addresses() -> None:
    limit = FailedAttempts(Clock())
    for n in range(attempts.MAX_ADDRESSES + 50):
        limit.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(limit) == attempts.MAX_ADDRESSES
    assert limit.wait_s("10.0.0.0") is None  # the oldest went first


def test_an_ipv6_client_is_counted_by_its_64_and_a_mapped_ipv4_as_itself() -> None:
    limit = FailedAttempts(Clock())
    for n in range(10):
        limit.failed(f"2001:db8:1:2::{n + 1:x}")  # one machine, a new address each time
    assert limit.wait_s("2001:db8:1:2:ffff::9") is not None
    assert limit.wait_s("2001:db8:1:3::1") is None
    for _ in range(10):
        limit.failed("::ffff:192.0.2.7")
    assert limit.wait_s("192.0.2.7") is not None

"""The one bounded cache every cache of the package is built on: its bounds, the order in which
it forgets, and what a hit and a miss do to that order."""

from __future__ import annotations

from feedbackd.core.lru import BoundedLRU


def test_a_miss_is_none_and_a_hit_gives_the_value_put() -> None:
    cache: BoundedLRU[str, int] = BoundedLRU(max_items=2)
    assert cache.get("a") is None and cache.peek("a") is None and "a" not in cache
    cache.put("a", 1)
    assert cache.get("a") == 1 and cache.peek("a") == 1 and "a" in cache and len(cache) == 1


def test_beyond_its_count_the_least_recently_put_goes_first() -> None:
    cache: BoundedLRU[str, int] = BoundedLRU(max_items=3)
    for number, key in enumerate("abcd"):
        cache.put(key, number)
    assert len(cache) == 3 and "a" not in cache and [cache.peek(k) for k in "bcd"] == [1, 2, 3]


def test_a_hit_makes_a_value_the_most_recently_used_and_a_peek_does_not() -> None:
    cache: BoundedLRU[str, int] = BoundedLRU(max_items=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now b is the least recently used
    cache.put("c", 3)
    assert "b" not in cache and "a" in cache
    assert cache.peek("a") == 1  # a stays the least recently used
    cache.put("d", 4)
    assert "a" not in cache and "c" in cache and "d" in cache


def test_putting_a_key_again_replaces_its_value_and_makes_it_the_newest() -> None:
    cache: BoundedLRU[str, str] = BoundedLRU(max_weight=10, weigh=lambda _, text: len(text))
    cache.put("a", "xxxx")
    cache.put("b", "yyyy")
    cache.put("a", "zz")
    assert cache.weight == 6 and cache.peek("a") == "zz"
    cache.put("c", "wwwww")  # 11: b, the least recently used, goes
    assert "b" not in cache and cache.weight == 7


def test_beyond_its_weight_the_oldest_go_until_it_fits() -> None:
    cache: BoundedLRU[str, list[int]] = BoundedLRU(max_weight=5, weigh=lambda _, rows: len(rows))
    cache.put("a", [1, 2])
    cache.put("b", [1, 2])
    cache.put("c", [1, 2, 3])  # 7 > 5: a goes; 5 fits
    assert "a" not in cache and "b" in cache and "c" in cache and cache.weight == 5


def test_the_weight_is_the_one_a_value_had_when_put() -> None:
    """A value that grows in the cache is taken out at its weight when put (the month files'
    rows grow only once taken out; the count must not drift either way)."""
    cache: BoundedLRU[str, list[int]] = BoundedLRU(max_weight=10, weigh=lambda _, rows: len(rows))
    rows = [1]
    cache.put("a", rows)
    rows.extend([2, 3])
    assert cache.pop("a") is rows and cache.weight == 0 and len(cache) == 0
    assert cache.pop("a") is None


def test_the_value_just_put_stays_even_when_heavier_than_the_bound() -> None:
    cache: BoundedLRU[str, str] = BoundedLRU(max_weight=3, weigh=lambda _, text: len(text))
    cache.put("a", "x")
    cache.put("big", "xxxxxx")
    assert list(filter(cache.__contains__, ["a", "big"])) == ["big"] and cache.weight == 6
    cache.put("b", "y")  # the heavy one is the least recently used now
    assert "big" not in cache and cache.weight == 1


def test_both_bounds_hold_at_once() -> None:
    cache: BoundedLRU[int, str] = BoundedLRU(max_items=3, max_weight=4, weigh=lambda _, v: len(v))
    for key in range(5):
        cache.put(key, "x")
    assert len(cache) == 3 and cache.weight == 3
    cache.put(9, "xx")  # 5 > 4: the oldest goes
    assert [key for key in (2, 3, 4, 9) if key in cache] == [3, 4, 9] and cache.weight == 4

"""The pure rules behind `serve`'s refusals."""

from __future__ import annotations

from feedbackd.core.websafety import origin_allowed


def test_a_null_origin_passes_only_from_the_same_origin() -> None:
    assert origin_allowed("null", "127.0.0.1:8787", "same-origin")
    assert not origin_allowed("null", "127.0.0.1:8787", "cross-site")
    assert not origin_allowed("null", "127.0.0.1:8787", None)

"""A mistyped `--skill` never passes for a skill not rated yet: an empty answer about a skill
that no provider in question has names the closest skill it does have."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedbackd.app.ratings.selfoptimize import skills_of
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.wording import closest


def unknown_skill(runtime: Runtime, skill: str, providers: Sequence[str]) -> dict[str, Any]:
    """What an empty report on `skill` adds when none of `providers` has it (in SOUL.md or a
    ratings folder): `closest_skill`, the closest skill they have (None when none is close),
    so that a script tells a typo from a skill nobody rated yet. Nothing for a skill they
    have: the report keeps exactly the keys SPEC lists."""
    known = known_skills(runtime, providers)
    if skill in known:
        return {}
    return {"closest_skill": closest(skill, known)}


def known_skills(runtime: Runtime, providers: Sequence[str]) -> list[str]:
    """The skills of the providers, sorted: each one's SOUL.md and ratings folders."""
    return sorted({skill for provider in providers for skill in skills_of(runtime, provider)})

"""The price a skill has without a `pricing:` line is the one the docs give: the panel and the
API show it, so a user must be able to read where it comes from."""

from __future__ import annotations

from feedbackd.core.ratings.soul import DEFAULT_PRICE, parse_soul
from tests.repo_kit import ROOT


def test_the_default_price_is_documented_as_the_code_has_it() -> None:
    default = f"{DEFAULT_PRICE:g}"
    assert parse_soul("# A\n\n## Run\n\nRuns it.\n").skills[0].price == DEFAULT_PRICE
    soul = (ROOT / "docs" / "ratings.md").read_text(encoding="utf-8")
    assert f"A skill without a `pricing:` line costs {default}" in soul
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"`pricing: N` lines (default {default})" in readme
    config = (ROOT / "config" / "feedbackd.yaml").read_text(encoding="utf-8")
    assert f"a skill without one costs {default}" in config

"""`feedback.max_entries`, the cap on feedback.json: its default, its bounds, and a quick reading
of it straight from the text of feedbackd.yaml.

git starts the merge driver once for every merged file, and the driver needs this one key:
building the whole settings model (core/config.py, pydantic) would cost it more than the merge.
So it reads the `feedback:` section alone. Where that section says something the quick reading
cannot vouch for (an unknown key, a value that is not a plain whole number in range, YAML that
does not parse), the answer is None and the caller asks the full settings, which explain what is
wrong.
"""

from __future__ import annotations

from typing import Any

from feedbackd.core.formats import yamlio

DEFAULT_MAX_ENTRIES = 200
MAX_ENTRIES_LIMIT = 100_000


def written_max_entries(config_text: str) -> int | None:
    """The cap that feedbackd.yaml text sets (the default where it sets none), or None when only
    the full settings can tell."""
    try:
        tree = yamlio.load(config_text, positions=False)
    except yamlio.YamlError:
        return None
    if tree is None:
        return DEFAULT_MAX_ENTRIES
    if not isinstance(tree, dict):
        return None
    section = tree.get("feedback")
    if section is None:  # absent, or `feedback:` with every key commented out
        return DEFAULT_MAX_ENTRIES
    if not isinstance(section, dict) or set(section) - {"max_entries"}:
        return None
    return _plain_cap(section.get("max_entries", DEFAULT_MAX_ENTRIES))


def _plain_cap(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_ENTRIES_LIMIT:
        return value
    return None

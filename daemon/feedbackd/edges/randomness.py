"""The system's source of randomness: the random characters of the ids feedbackd makes.

The core holds no randomness: it makes an id from a `now` and a `Draw` its caller passes
(core/ids.py keeps the formats), and this is the draw every caller outside the tests passes.
"""

from __future__ import annotations

import secrets


def random_chars(alphabet: str, count: int) -> str:
    """`count` characters of `alphabet`, each drawn on its own from the system's randomness."""
    return "".join(secrets.choice(alphabet) for _ in range(count))

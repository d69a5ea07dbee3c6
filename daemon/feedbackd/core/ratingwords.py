"""The words a rating may use for its quality and its value for money (SPEC §6), best first.

Kept apart from the rating model so that what reads month files in bulk (in worker processes
too) knows them without loading the model's validation machinery.
"""

from __future__ import annotations

from typing import Literal, get_args

# Settings key their maps by these too.
Quality = Literal["excellent", "good", "acceptable", "poor", "failed"]
CostValue = Literal["great", "fair", "overpriced"]
QUALITIES: tuple[Quality, ...] = get_args(Quality)
COST_VALUES: tuple[CostValue, ...] = get_args(CostValue)
FAILED_QUALITIES: frozenset[Quality] = frozenset({"poor", "failed"})

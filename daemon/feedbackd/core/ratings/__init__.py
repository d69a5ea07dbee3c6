"""Ratings as pure values: rating records, reputation, the self-optimisation rules, SOUL.md,
memory."""

"""`make run`'s demo: a fresh workspace in .demo/ from the sample `_data/`, eight weeks of
its agents' history (weeks.py), then the daemon on it (`python -m feedbackd.cli.demo`)."""

from feedbackd.cli.demo.build import build, main, refuse_while_in_use

__all__ = ["build", "main", "refuse_while_in_use"]

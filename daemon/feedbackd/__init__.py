"""feedbackd: a git-backed file-sync daemon that closes the learning loop for AI agents."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load_feedback_for_prompt"]


def __getattr__(name: str) -> object:
    # Imported lazily so `import feedbackd` stays cheap for the CLI and merge driver.
    if name == "load_feedback_for_prompt":
        from feedbackd.loop.workspace.agentfiles import load_feedback_for_prompt

        return load_feedback_for_prompt
    raise AttributeError(name)

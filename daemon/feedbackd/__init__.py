"""feedbackd: a git-backed file-sync daemon that closes the learning loop for AI agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

__version__ = "0.1.0"

__all__ = ["__version__", "load_feedback_for_prompt"]


def load_feedback_for_prompt(
    agent_id: str,
    limit: int = 5,
    workspace: str | Path | None = None,
    *,
    for_text: str | None = None,
) -> list[dict[str, Any]]:
    """The agent's last `limit` correction examples as `{"original", "corrected", "field"}`
    dicts, oldest first: what prompt/feedback.md shows, for agent runners that build their own
    prompt. With `for_text` (a task or a draft, at most 1 MiB), the `limit` examples most
    relevant to it instead, the most relevant last (SPEC section 13, `prompt --for`)."""
    # Imported when called, so `import feedbackd` stays cheap for the CLI and merge driver, and
    # only a caller that ranks loads numpy.
    if for_text is None:
        from feedbackd.app.workspace.agentfiles import load_feedback_for_prompt as last

        return last(agent_id, limit, workspace)
    from feedbackd.app.commands.promptfor import examples_for

    return examples_for(agent_id, limit, workspace, for_text)

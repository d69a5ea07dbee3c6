"""One run of an agent command (`eval.command`, `--command`): no shell, in the workspace, with
feedbackd's environment and a deadline after which it is stopped with its children. Never
raises for the command's own failures: they come back as a reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from feedbackd.edges.process import run_command


@dataclass(frozen=True)
class Ran:
    """What the command printed, or why it gave no answer (`reason`)."""

    stdout: str
    reason: str = ""


def run_agent_command(
    argv: Sequence[str], request: str, *, cwd: Path, env: Mapping[str, str], timeout: float
) -> Ran:
    done = run_command(argv, stdin=request, timeout=timeout, cwd=cwd, env=env)
    if done.ok:
        return Ran(done.stdout)
    said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    last = f": {said[-1][:200]}" if said else ""
    return Ran("", f"{done.reason}{last}")

"""`feedbackd doctor` starts a bounded number of git processes, however many drafts and
decisions an agent has: a big site's doctor must not start one git per file."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli_kit import run_cli
from tests.git_kit import counting_git
from tests.workspace_kit import Site, draft, settling_in


def site_with(root: Path, decided: int, queued: int) -> Site:
    """An agent with `decided` approved items whose ledger lines were lost (decisions.jsonl
    deleted: doctor looks each up in history) and `queued` drafts on record."""
    site = settling_in(root, 50)
    for number in range(decided):
        site.write("writer", f"qi-{number}.json", draft({"title": f"Decided {number}"}), "approved")
    for number in range(queued):
        site.write("writer", f"qd-{number}.json", draft({"title": f"Queued {number}"}))
    site.reconcile()
    (site.agent("writer") / "decisions.jsonl").unlink()
    return site


def doctor_git_calls(site: Site, tmp_path: Path) -> tuple[dict[str, object], int]:
    """doctor --json's report, and how many git processes it started."""
    wrapper, calls = counting_git(tmp_path / f"git-{site.root.name}")
    env = {**os.environ, "GIT_PYTHON_GIT_EXECUTABLE": str(wrapper)}
    done = run_cli(["-w", str(site.root), "doctor", "--json"], env=env)
    assert done.returncode == 1, done.stderr  # the lost ledger lines are a finding
    started = len(calls.read_text().splitlines()) if calls.exists() else 0
    return json.loads(done.stdout), started


def test_doctor_starts_as_many_git_processes_for_30_files_as_for_3(tmp_path: Path) -> None:
    _, few = doctor_git_calls(site_with(tmp_path / "small", 2, 1), tmp_path)
    big, many = doctor_git_calls(site_with(tmp_path / "big", 20, 10), tmp_path)
    assert many == few, f"{few} git processes for 3 files, {many} for 30"
    messages = [problem["message"] for problem in big["problems"]]  # type: ignore[index]
    assert any("20 decisions that git holds have no line" in m for m in messages), messages

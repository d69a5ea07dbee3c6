"""`feedbackd doctor` on a terminal or for a script: what examine() found, and how to fix it."""

from __future__ import annotations

from rich.markup import escape

from feedbackd.app.commands.diagnosis import examine
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.cli.output import console, print_json, progress_bar
from feedbackd.core.errors import PathProblem
from feedbackd.core.ids import shown_path
from feedbackd.core.wording import counted


def run_doctor(runtime: Runtime, as_json: bool) -> int:
    with progress_bar("checking files", enabled=not as_json) as progress:
        checked, findings = examine(runtime, progress)
    if as_json:
        print_json(
            {"ok": not findings, "checked": checked, "problems": [f.to_json() for f in findings]}
        )
    else:
        _print_human(checked, findings)
    return 1 if findings else 0


def _print_human(checked: int, findings: list[PathProblem]) -> None:
    out = console()
    if not findings:
        out.print(f"[green]ok[/]: {counted(checked, 'file')} checked, no problems")
        return
    for finding in findings:
        where = shown_path(str(finding.path))
        out.print(f"[red]problem[/]: {escape(f'{where}: {finding.message}')}")
        if finding.hint:
            out.print(f"  fix: {escape(finding.hint)}")
    out.print(f"{counted(len(findings), 'problem')} in {counted(checked, 'file')} checked")

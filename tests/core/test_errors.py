"""Error codes: every code a user or script may see is defined once, in core/errors.py."""

from __future__ import annotations

import ast
from pathlib import Path

from feedbackd.core import errors
from feedbackd.core.curation.agentplan import BadFile
from tests.repo_kit import PACKAGE


def _codes_set_outside_errors() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "core" / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and any(k.arg == "code" for k in node.keywords):
                found.append(f"{path.name}:{node.lineno} code=")
            if isinstance(node, ast.ClassDef):
                if any(k.arg == "code" for k in node.keywords):
                    found.append(f"{path.name}:{node.lineno} class {node.name}(code=)")
                for statement in node.body:
                    targets = statement.targets if isinstance(statement, ast.Assign) else []
                    if any(isinstance(t, ast.Name) and t.id == "code" for t in targets):
                        found.append(f"{path.name}:{statement.lineno} class {node.name}")
    return found


def test_no_error_code_is_made_up_outside_core_errors() -> None:
    assert _codes_set_outside_errors() == []


def test_each_error_code_is_defined_by_one_class() -> None:
    """A subclass that only narrows an error (WriterBusy is a Locked the HTTP server answers as
    busy) keeps its parent's code, so the commands answer as they always did."""
    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.FeedbackdError)
    ]
    codes = [cls.code for cls in classes if "code" in vars(cls)]
    assert len(codes) == len(set(codes)), codes
    assert {"feedback_already_submitted", "invalid_id", "not_found", "merge_conflict"} <= set(codes)


def test_a_path_problem_is_told_as_an_error_is() -> None:
    """A file that cannot be used is told in an error's words (logs, `.error` files) and as
    `doctor --json` lists it; a bad file of a pass is one, made from the error found."""
    problem = errors.PathProblem(Path("_data/agents/w/queue/qi-1.json"), "not JSON", "fix it")
    error = errors.InvalidItem("not JSON", hint="fix it")
    assert str(problem) == str(error) == "not JSON (fix it)"
    assert str(errors.PathProblem(Path("x"), "gone", "")) == str(errors.NotFound("gone")) == "gone"
    assert problem.to_json() == {
        "path": "_data/agents/w/queue/qi-1.json",
        "message": "not JSON",
        "hint": "fix it",
    }
    bad = BadFile.of(problem.path, error, settles=False)
    assert (bad.path, bad.message, bad.hint, bad.settles) == (
        problem.path,
        "not JSON",
        "fix it",
        False,
    )

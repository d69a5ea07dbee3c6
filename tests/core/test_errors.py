"""Error codes: every code a user or script may see is defined once, in core/errors.py."""

from __future__ import annotations

import ast

from feedbackd.core import errors
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

"""One way for a value to say itself as JSON (core/formats/jsontext.py): a method named `to_json`
that returns the object, on every value the package prints, answers or keeps as JSON."""

from __future__ import annotations

import ast
from pathlib import Path

from feedbackd.app.daemon.statusfile import PassProgress
from feedbackd.core.curation.learningcurve import Tally
from feedbackd.core.errors import PathProblem
from feedbackd.core.formats.jsontext import ToJson
from tests.repo_kit import PACKAGE

OTHER_NAMES = frozenset({"as_json", "json", "to_dict", "as_dict", "asdict", "dict"})


def _json_methods() -> tuple[list[str], list[str]]:
    """Methods of the package's classes that turn a value into JSON by another name, and
    `to_json` methods whose return is not annotated as the protocol's."""
    other, off = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for method in node.body:
                if not isinstance(method, ast.FunctionDef):
                    continue
                where = f"{path.relative_to(PACKAGE)}:{method.lineno} {node.name}.{method.name}"
                if method.name in OTHER_NAMES:
                    other.append(where)
                returns = ast.unparse(method.returns) if method.returns else None
                if method.name == "to_json" and returns != "dict[str, Any]":
                    off.append(where)
    return other, off


def test_every_value_says_itself_as_json_by_one_name_and_shape() -> None:
    assert _json_methods() == ([], [])


def test_the_shared_records_follow_the_protocol() -> None:
    for value in (PathProblem(Path("a"), "m", "h"), Tally(), PassProgress("w", 1, 2)):
        assert isinstance(value, ToJson)
        assert isinstance(value.to_json(), dict)

"""Every reader of the workspace's files opens them through edges/files.py's open_plain_file,
which opens nothing but a plain file (a named pipe in a file's place would hold a plain open
forever, and the server's worker thread or the daemon with it). A read any other way is found
here by name, whatever object it is called on; the few that read no workspace file are named."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from feedbackd.edges.files import NotAPlainFile, open_plain_file, read_file_bytes, read_file_text
from tests.repo_kit import PACKAGE

READS = frozenset({"read_text", "read_bytes", "open"})
# Where a plain read is right: the helper itself (and its writes), the kernel's tables, the
# package's own static files, a SQLite blob.
NOT_WORKSPACE_FILES = {
    "edges/files.py": {"open"},
    "edges/hostnames.py": {"read_text"},
    "web/panel.py": {"read_text"},
}


def _reads(path: Path) -> list[str]:
    """`line what` for each plain read in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append((node.lineno, "open"))
        elif isinstance(func, ast.Attribute) and func.attr in READS:
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id in {"os", "Runtime", "NativeStore"}:
                continue  # os.open (flags given), the classes' own `open` constructors
            found.append((node.lineno, func.attr))
    rel = path.relative_to(PACKAGE).as_posix()
    allowed = NOT_WORKSPACE_FILES.get(rel, set())
    return [f"{rel}:{line} {what}" for line, what in found if what not in allowed]


def test_no_module_reads_a_file_but_through_the_plain_file_helper() -> None:
    found = [read for module in sorted(PACKAGE.rglob("*.py")) for read in _reads(module)]
    assert found == []


def test_the_check_finds_a_plain_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = PACKAGE / "loop" / "example.py"
    text = "p.read_text()\nwith open(p) as f: pass\nwith p.open() as f: pass\nos.open(p, 0)\n"
    monkeypatch.setattr(Path, "read_text", lambda self, **_: text)
    found = [f"loop/example.py:{line}" for line in ("1 read_text", "2 open", "3 open")]
    assert _reads(module) == found


def test_a_pipe_is_refused_at_once_and_a_plain_file_read(tmp_path: Path) -> None:
    pipe = tmp_path / "feedback.md"
    os.mkfifo(pipe)
    for read in (open_plain_file, read_file_bytes, read_file_text):
        with pytest.raises(NotAPlainFile):
            read(pipe)
    with pytest.raises(IsADirectoryError):
        read_file_bytes(tmp_path)
    plain = tmp_path / "plain.md"
    plain.write_bytes(b"caf\xc3\xa9 \xff")
    assert read_file_text(plain, "replace") == "café \ufffd"
    with open_plain_file(plain) as handle:
        assert handle.read(3) == b"caf"

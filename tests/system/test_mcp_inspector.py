"""A client that is not ours: the MCP Inspector's command-line mode (`npx
@modelcontextprotocol/inspector --cli`, from the npm registry) starts `feedbackd mcp` on the demo
workspace, lists its tools and calls lessons_for.

The inspector is installed once into a folder of the virtual environment, in the background
from the session's start (tests/inspector_kit.py); the test is skipped, saying why, where node
and npx are missing or the registry cannot be reached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from feedbackd.cli import demo
from tests.inspector_kit import INSTALLED, PACKAGE, install, missing_tools
from tests.mcp_kit import cli_json

pytestmark = pytest.mark.slow
TASK = "A blog post on typing an API client with TypeScript generics."


@pytest.fixture(scope="module")
def inspector() -> Path:
    """The folder the inspector is installed in; the test is skipped when it cannot be."""
    missing = missing_tools()
    if missing:
        pytest.skip(f"the MCP Inspector needs node, npx and npm: no {', '.join(missing)} here")
    why = install()
    if why is not None:
        pytest.skip(why)
    return INSTALLED


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo") / "demo"
    demo.build(root)
    return root


def inspect(inspector: Path, root: Path, *args: str) -> Any:
    """`npx @modelcontextprotocol/inspector --cli python -m feedbackd -w ROOT mcp ARGS`."""
    server = [sys.executable, "-m", "feedbackd", "-w", str(root), "mcp"]
    argv = ["npx", "--no", "--", PACKAGE, "--cli", *server, *args]
    done = subprocess.run(argv, cwd=inspector, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.timeout(900)  # the first run installs the inspector: a minute or more
def test_the_inspector_lists_the_tools_and_calls_lessons_for_on_the_demo(
    inspector: Path, built: Path
) -> None:
    listed = inspect(inspector, built, "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}
    assert {"lessons_for", "snippet", "why", "stats", "submit_rating"} <= names
    lessons = next(tool for tool in listed["tools"] if tool["name"] == "lessons_for")
    assert lessons["inputSchema"]["required"] == ["agent", "task"] and lessons["outputSchema"]
    asked = inspect(
        inspector, built, "--method", "tools/call", "--tool-name", "lessons_for",
        "--tool-arg", "agent=content-writer", "--tool-arg", f"task={TASK}",
    )  # fmt: skip
    printed = cli_json(built, "prompt", "content-writer", "--for", "-", "--json", stdin=TASK)
    assert asked["structuredContent"] == printed
    assert asked["content"][0]["text"] == printed["text"] and not asked.get("isError")

"""The HTTP examples of docs/http-api.md work as pasted, in the demo workspace of `make run`:
every `curl` answers without an HTTP error, every file a command names is made first, and the
writes leave the demo's own agents as they were (the tour after them stays exactly true)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from feedbackd.cli.demo import build
from tests.conftest import git
from tests.repo_kit import ROOT
from tests.web_kit import serving

PAGE = ROOT / "docs" / "http-api.md"
DEMO_AGENTS = ["content-writer", "seo-helper", "heavylift-chengwen", "genesis-bot"]
# Every curl of the examples fails on an HTTP error, as `set -e` stops at the first.
STRICT = 'set -euo pipefail\ncurl() { command curl --fail-with-body --show-error "$@"; }\n'

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)


def table_examples() -> list[str]:
    """The `curl` one-liners of the routes' table, as a reader copies them."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.findall(r"\| `(curl [^`]+)` \|$", text, flags=re.MULTILINE)
    return [example.replace("\\|", "|") for example in found]


def run(script: str, root: Path, port: int) -> subprocess.CompletedProcess[str]:
    pasted = script.replace("localhost:8787", f"localhost:{port}")
    return subprocess.run(
        ["bash", "-c", STRICT + pasted], cwd=root, capture_output=True, text=True, timeout=120
    )


def demo_state(root: Path) -> str:
    """The demo agents' files and the commits that touched them."""
    paths = [f"_data/agents/{agent}" for agent in DEMO_AGENTS]
    commits = git(root, "log", "--format=%H", "--", *paths)
    files = sorted(
        f"{path.relative_to(root)}:{path.read_bytes()!r}"
        for agent in DEMO_AGENTS
        for path in (root / "_data" / "agents" / agent).rglob("*")
        if path.is_file()
    )
    return commits + "\n".join(files)


def git_status(root: Path) -> str:
    return git(root, "status", "--porcelain")


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    build(root)
    return root


def test_the_writes_go_to_a_throwaway_agent_and_the_clean_up_removes_it(demo: Path) -> None:
    before, untracked = demo_state(demo), git_status(demo)  # the drafts wait for the daemon
    writes, clean_up = shell_blocks(section("Trying the writes"))
    with serving(demo) as client:
        done = run(writes, demo, client.port)
        assert done.returncode == 0, done.stderr + done.stdout
        assert "Corrected: A better first draft" in done.stdout  # the throwaway's snippet
        assert demo_state(demo) == before
        rating = writes[writes.index("cat > rating.json") :]
        again = run(rating, demo, client.port)  # the rating alone, pasted again
        assert again.returncode == 0, again.stderr  # a new transaction_id each time
        cleaned = run(clean_up, demo, client.port)
        assert cleaned.returncode == 0, cleaned.stderr
    assert not (demo / "_data" / "agents" / "scratch").exists()
    assert not (demo / "_data" / "agents" / "scratch-buyer").exists()
    assert git_status(demo) == untracked and demo_state(demo) == before


def test_every_example_of_the_routes_table_answers(demo: Path) -> None:
    examples = table_examples()
    assert len(examples) >= 15
    if shutil.which("jq") is None:
        examples = [example for example in examples if "| jq" not in example]
    before = demo_state(demo)
    with serving(demo) as client:
        for example in examples:
            assert "-X POST" not in example or "/prompt" in example, example  # reads only
            done = run(example, demo, client.port)
            assert done.returncode == 0, (example, done.stderr)
    assert demo_state(demo) == before

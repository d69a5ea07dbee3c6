"""The MCP Inspector (`@modelcontextprotocol/inspector`, from the npm registry), installed once
into a folder of the virtual environment for tests/system/test_mcp_inspector.py.

Its install takes half a minute on a fresh machine (250 packages): a run that includes that test
starts it in the background as the session starts (conftest.py), and the test waits for it
only if it comes first. One install at a time: each holds a lock on a file beside the folder.

`python -m tests.inspector_kit` installs it (what the background runs)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = "@modelcontextprotocol/inspector"
INSTALLED = Path(sys.prefix) / "mcp-inspector"  # kept with the virtual environment
LOCK = Path(sys.prefix) / "mcp-inspector.lock"
TEST = Path(__file__).parent / "system" / "test_mcp_inspector.py"
INSTALL_S = 600


def missing_tools() -> list[str]:
    return [tool for tool in ("node", "npx", "npm") if shutil.which(tool) is None]


def installed() -> bool:
    return (INSTALLED / "node_modules" / ".bin" / "mcp-inspector").exists()


def install() -> str | None:
    """Install the inspector unless it is (waiting for an install under way); None when it is
    there, else why it is not."""
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # an install under way: wait for its end
        if installed():
            return None
        INSTALLED.mkdir(exist_ok=True)
        # --prefer-offline: what npm's cache holds is not asked for again.
        argv = ["npm", "install", "--prefix", str(INSTALLED), "--no-audit", "--no-fund"]
        argv += ["--prefer-offline", PACKAGE]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_S)
        except subprocess.TimeoutExpired:
            return f"npm install {PACKAGE} did not finish in {INSTALL_S // 60} minutes"
        if done.returncode != 0:
            return f"npm install {PACKAGE} failed: {done.stderr.strip()[-500:]}"
        return None


def start_installing(args: list[str], root: Path) -> None:
    """Start installing the inspector in the background when the run's `args` (paths, relative
    to `root`) include its test and it is not installed yet."""
    if installed() or missing_tools() or not _includes_the_test(args, root):
        return
    # Through a shell that leaves it running on its own: it finishes the install even if the
    # run ends first, and the run has no child to wait for.
    background = 'exec "$@" </dev/null >/dev/null 2>&1 &'
    argv = ["sh", "-c", background, "sh", sys.executable, "-m", "tests.inspector_kit"]
    subprocess.run(argv, cwd=Path(__file__).parent.parent, check=True)


def _includes_the_test(args: list[str], root: Path) -> bool:
    paths = [(root / arg.partition("::")[0]).resolve() for arg in args] or [root / "tests"]
    return any(path == TEST or path in TEST.parents for path in paths)


if __name__ == "__main__":
    sys.exit(0 if install() is None else 1)

"""Run every benchmark in tests/bench (`bench_*.py`) with its defaults: `python -m tests.bench`.

Each one runs in its own interpreter, so one benchmark's memory and caches never colour the
next one's figures. The exit status is 1 when any benchmark missed a target or failed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def benchmarks() -> list[str]:
    here = Path(__file__).parent
    return [f"tests.bench.{path.stem}" for path in sorted(here.glob("bench_*.py"))]


def main() -> int:
    failed = []
    for module in benchmarks():
        print(f"== {module}", flush=True)
        if subprocess.run([sys.executable, "-m", module], check=False).returncode != 0:
            failed.append(module)
    if failed:
        print(f"missed a target or failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

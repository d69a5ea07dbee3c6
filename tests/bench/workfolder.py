"""Where a benchmark builds its workspaces: a temporary folder removed afterwards, or the folder
`--keep` names, made new and left for a look."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def in_work_folder(run: Callable[[Path], bool], keep: Path | None, prefix: str) -> int:
    """Exit status 0 when `run(folder)` says every target was met, else 1."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=False)
        return 0 if run(keep.absolute()) else 1
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        return 0 if run(work) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)

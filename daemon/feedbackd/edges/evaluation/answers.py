"""The agent command's answers, kept in `.feedbackd/eval/answers/` by the key of (command line,
item, input, draft, snippet text), so that a repeated `eval` or every step of `bisect` runs the
command only for what it has not seen. Only answers are kept, never failures (a timeout may not
happen again). Local and rebuildable: a file that cannot be read or written is no answer kept."""

from __future__ import annotations

import contextlib
from pathlib import Path

from feedbackd.edges.files import atomic_write_bytes, read_file_bytes

# Each file starts with this: a file cut short by a crash (durable=False) is no answer.
_MARK = b"feedbackd-answer\n"


class Answers:
    def __init__(self, state_dir: Path) -> None:
        self.folder = state_dir / "eval" / "answers"

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.out"

    def get(self, key: str) -> str | None:
        try:
            data = read_file_bytes(self._path(key))
        except OSError:
            return None
        if not data.startswith(_MARK):  # empty: written when the machine stopped
            return None
        return data[len(_MARK) :].decode("utf-8", errors="surrogatepass")

    def put(self, key: str, answer: str) -> None:
        path = self._path(key)
        with contextlib.suppress(OSError):  # a cache that cannot be written is no cache
            path.parent.mkdir(parents=True, exist_ok=True)
            data = _MARK + answer.encode("utf-8", errors="surrogatepass")
            atomic_write_bytes(path, data, durable=False)

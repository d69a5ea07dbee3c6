"""Where the repository's own files are, for the tests that read them (docs, units, the
package's source), wherever in tests/ a test file sits."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "daemon" / "feedbackd"
TESTS = ROOT / "tests"

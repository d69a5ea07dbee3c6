"""The reports `feedbackd eval --note` keeps (refs/notes/feedbackd-eval) travel with git.remote
sync: each machine's notes reach the others, and a revision noted on two machines keeps one
report, never a broken mix of both (SPEC section 14)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.app.test_remotesync import CONFIG, Network, once
from tests.eval_kit import AGENT, lessons_then_later
from tests.workspace_kit import Site

BUILTIN = "builtin:apply-lessons"


def noted(site: Site, at: str) -> dict[str, object]:
    done = site.cli("eval", AGENT, "--command", BUILTIN, "--at", at, "--note", "--json")
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def note_of(site: Site, commit: str) -> dict[str, object]:
    return json.loads(site.git("notes", "--ref=feedbackd-eval", "show", commit))  # type: ignore[no-any-return]


def test_eval_notes_go_with_the_remote_sync(tmp_path: Path) -> None:
    net = Network(tmp_path)
    a = net.clone("a")
    a.configure(CONFIG)
    between = lessons_then_later(a)
    assert once(a) == []  # pushes the decisions
    on_a = noted(a, between)
    assert once(a) == []  # pushes the note
    b = net.clone("b")
    b.configure(CONFIG)
    assert once(b) == []
    assert note_of(b, between) == on_a
    # b notes another revision, and both note `between` again: each keeps its own there.
    later = b.git("rev-parse", "HEAD~2").strip()
    on_b = noted(b, later)
    noted(b, between)
    assert once(b) == []
    assert once(a) == []
    assert note_of(a, later) == on_b
    assert note_of(a, between) == on_a

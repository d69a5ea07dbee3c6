"""What a newcomer met in the first hour from a fresh clone: output cut short by `| head`, a task
file that writes an id of its own, a file of another type in queue/, the same warning logged at
every pass, an approval of a broken draft that names no file, `--json` after `export`, and a new
agent made with `mkdir -p NEW/queue` that has nowhere to move its drafts."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from pathlib import Path

import pytest

from feedbackd.app.reconcile import reconcile_all
from tests.cli_kit import PROGRAM
from tests.daemon_kit import DaemonProcess, NotifyListener, wait_for
from tests.web_kit import serving
from tests.workspace_kit import Site, draft

AGENT = "content-writer"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """content-writer with two decisions (so export has rows) and a draft waiting."""
    site = Site(tmp_path / "site")
    for number in (1, 2):
        doc = draft({"title": f"new {number}"}, {"title": f"old {number}"})
        site.write(AGENT, f"qi-{number}.json", doc, "approved")
    site.write(AGENT, "qi-3.json", draft({"title": "a draft"}))
    site.reconcile()
    return site


# --- 14: a reader that stops early ----------------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        ["export", AGENT, "--format", "openai-sft"],
        ["log", AGENT, "--json"],
        ["recent", AGENT],
        ["prompt", AGENT, "--json"],
        ["status", "--json"],
        ["--help"],
    ],
)
def test_a_command_whose_reader_has_gone_stops_quietly(site: Site, command: list[str]) -> None:
    """`feedbackd export ... | head -1`: the reader closes the pipe; the command stops with no
    traceback and no error line, exit 0 or 141 (as a shell reports SIGPIPE)."""
    reading, writing = os.pipe()
    os.close(reading)  # the reader has gone before the first byte: every write fails
    try:
        done = subprocess.run(
            [*PROGRAM, "-w", str(site.root), *command],
            stdout=writing,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(writing)
    assert done.returncode in (0, 141), done.stderr
    assert "Traceback" not in done.stderr and "error" not in done.stderr.lower(), done.stderr


# --- 15: a task is not a draft --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("task.json", json.dumps({"id": "qi-9", "contentData": {"title": "new 1"}})),
        ("task.yaml", 'id: qi-9\ncontentData:\n  title: "new 1"\n'),
        ("task.md", "---\nid: qi-9\ntitle: new 1\n---\nbody\n"),
    ],
)
def test_prompt_for_a_task_file_takes_the_id_it_writes(
    site: Site, tmp_path: Path, name: str, text: str
) -> None:
    task = tmp_path / name
    task.write_text(text)
    done = site.cli("prompt", AGENT, "--for", str(task))
    assert done.returncode == 0, done.stderr
    assert "Corrected: new 1" in done.stdout


def test_prompt_for_a_task_file_with_a_broken_id_is_still_refused(
    site: Site, tmp_path: Path
) -> None:
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"id": ["x"], "contentData": {"title": "t"}}))
    done = site.cli("prompt", AGENT, "--for", str(task))
    assert done.returncode == 1 and "id must be a string" in done.stderr


# --- 16: a file of another type in queue/ ---------------------------------------------------------
def test_a_file_of_another_type_in_queue_is_explained_and_reported(site: Site) -> None:
    odd = site.write(AGENT, "qi-307.txt", "a draft saved as text\n")
    site.write(AGENT, "qi-101.json~", "an editor's backup\n")
    site.write(AGENT, "#qi-101.json#", "an editor's autosave\n")
    report = site.reconcile()
    line = f"_data/agents/{AGENT}/queue/qi-307.txt: .txt is not an item format"
    assert [p.line(site.root) for p in report.problems if "qi-307" in p.line(site.root)] == [
        line + "; feedbackd ignores this file"
    ]
    explained = odd.with_name("qi-307.txt.error").read_text()
    assert explained.startswith("feedbackd: .txt is not an item format")
    assert "qi-307.json" in explained  # the way on: rename it
    for backup in ("qi-101.json~", "#qi-101.json#"):
        assert not (odd.parent / f"{backup}.error").exists()
    status = json.loads(site.cli("status", "--json").stdout)
    assert [p for p in status["problems"] if "qi-307" in p] == [
        line + "; feedbackd ignores this file"
    ]
    doctor = site.cli("doctor", "--json")
    assert doctor.returncode == 1
    found = json.loads(doctor.stdout)["problems"]
    assert [f["path"] for f in found] == [f"_data/agents/{AGENT}/queue/qi-307.txt"]
    # Nothing else is disturbed: the draft beside it is still listed, the panel shows both.
    with serving(site.root) as client:
        listed = client.get(f"/api/agents/{AGENT}/queue").json()["drafts"]
        assert [d["id"] for d in listed if "error" not in d] == ["qi-3"]
        assert [d["format"] for d in listed if "error" in d] == ["txt"]
        page = client.get(f"/agents/{AGENT}")
        assert page.status == 200 and "qi-307.txt" in page.text
    odd.rename(odd.with_name("qi-307.json"))
    odd.with_name("qi-307.json").write_text(json.dumps(draft({"title": "t"})))
    site.reconcile()
    assert not odd.with_name("qi-307.txt.error").exists()


def test_a_file_of_another_type_in_approved_is_reported_too(site: Site) -> None:
    site.write(AGENT, "qi-308.docx", b"PK\x03\x04", "approved")
    report = site.reconcile()
    lines = [problem.line(site.root) for problem in report.problems]
    where = f"_data/agents/{AGENT}/approved/qi-308.docx"
    assert any(line.startswith(f"{where}: .docx is not an item format") for line in lines)
    assert (
        "move it out of approved/" in (site.agent(AGENT) / "approved/qi-308.docx.error").read_text()
    )


# --- 17: one warning per change of a broken draft -------------------------------------------------
def test_a_broken_draft_is_logged_once_per_change(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    broken = site.write(AGENT, "qi-300.json", '{"contentData": ')
    runtime = site.runtime()  # the daemon keeps one runtime from pass to pass
    with caplog.at_level(logging.WARNING, logger="feedbackd"):
        for _ in range(3):
            reconcile_all(runtime)
    told = [r.getMessage() for r in caplog.records if "qi-300.json" in r.getMessage()]
    assert len(told) == 1, told
    caplog.clear()
    broken.write_text('{"contentData": [')  # changed, still broken: said again, once
    saved = time.time() - 60
    os.utime(broken, (saved, saved))
    with caplog.at_level(logging.WARNING, logger="feedbackd"):
        for _ in range(3):
            reconcile_all(runtime)
    told = [r.getMessage() for r in caplog.records if "qi-300.json" in r.getMessage()]
    assert len(told) == 1, told


def test_a_file_of_another_type_is_logged_once(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    site.write(AGENT, "qi-307.txt", "text\n")
    runtime = site.runtime()
    with caplog.at_level(logging.WARNING, logger="feedbackd"):
        for _ in range(3):
            reconcile_all(runtime)
    told = [r.getMessage() for r in caplog.records if "qi-307.txt" in r.getMessage()]
    assert len(told) == 1, told


# --- 18: approving a broken draft names it --------------------------------------------------------
def test_approving_a_broken_draft_names_the_file(site: Site) -> None:
    site.write(AGENT, "qi-300.json", '{"contentData": ')
    where = f"_data/agents/{AGENT}/queue/qi-300.json"
    for command in (["approve", AGENT, "qi-300"], ["reject", AGENT, "qi-300", "--notes", "no"]):
        done = site.cli(*command)
        assert done.returncode == 1
        assert done.stderr.startswith(f"error: invalid_item: {where}: the JSON ends"), done.stderr
    with serving(site.root) as client:
        answer = client.post(f"/api/agents/{AGENT}/queue/qi-300/approve", {})
        assert answer.status == 400
        assert answer.json()["message"].startswith(f"{where}: the JSON ends")


# --- 19: --json after the command, everywhere -----------------------------------------------------
def test_json_after_export_is_taken(site: Site, tmp_path: Path) -> None:
    done = site.cli("export", AGENT, "--format", "openai-sft", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == site.cli("export", AGENT, "--format", "openai-sft").stdout
    out = tmp_path / "rows.jsonl"
    done = site.cli("export", AGENT, "--format", "openai-sft", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["rows"] == 2 and report["format"] == "openai-sft"
    assert report["out"] == str(out) and len(report["commit"]) == 40


# --- 26: a new agent made with mkdir --------------------------------------------------------------
def test_a_new_agent_gets_its_decision_folders_kept_in_git(site: Site) -> None:
    site.write("newcomer", "qi-1.json", draft({"title": "t"}))
    site.reconcile()
    for folder in ("approved", "rejected"):
        assert (site.agent("newcomer") / folder).is_dir()
        assert f"_data/agents/newcomer/{folder}/.gitkeep" in site.git("ls-files").splitlines()
    assert site.git("status", "--porcelain") == ""
    (site.agent("newcomer") / "queue" / "qi-1.json").rename(
        site.agent("newcomer") / "approved" / "qi-1.json"
    )  # a plain mv, with no mkdir first
    site.reconcile()
    assert "approve(newcomer): qi-1" in site.git("log", "-1", "--format=%s")


@pytest.mark.slow
def test_the_daemon_logs_a_broken_draft_once_while_other_drafts_come_and_go(
    site: Site, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    """Every event in the agent's folder is a pass over it: five decisions, five passes and
    more, and the broken draft beside them is logged once, as is the file of another format."""
    site.write(AGENT, "qi-300.json", '{"contentData": ')
    site.write(AGENT, "qi-307.txt", "text\n")
    for number in range(10, 15):
        site.write(AGENT, f"qi-{number}.json", draft({"title": f"t{number}"}))
    site.reconcile()
    daemon = start(site, listener)
    daemon.wait_ready()
    for number in range(10, 15):
        site.move(AGENT, f"qi-{number}.json", "approved")
        wait_for(
            lambda n=number: f"approve({AGENT}): qi-{n}" in site.git("log", "-1", "--format=%s"),
            what=f"the approval of qi-{number}",
        )
    assert daemon.stop() == 0
    log = daemon.log()
    assert log.count("queue/qi-300.json: the JSON ends") == 1, log
    assert log.count("queue/qi-307.txt: .txt is not an item format") == 1, log

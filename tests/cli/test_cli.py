"""The command line as users and scripts see it: outputs, exit codes and error formats."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from feedbackd.core.ratings.records import ALLOWED
from tests.cli_kit import run_cli, run_process
from tests.conftest import git
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path / "site")


def test_init_is_idempotent_and_sets_up_git(tmp_path: Path) -> None:
    root = tmp_path / "new"
    for _ in range(2):
        done = run_cli(["init", str(root)])
        assert done.returncode == 0, done.stderr
    assert (root / "_data" / "agents").is_dir()
    assert "feedback.json merge=feedbackd" in (root / ".gitattributes").read_text()
    assert "/.feedbackd/" in (root / ".gitignore").read_text().splitlines()
    config = subprocess.run(
        ["git", "config", "merge.feedbackd.driver"], cwd=root, capture_output=True, text=True
    )
    assert "merge-driver %O %A %B %P" in config.stdout
    log = subprocess.run(["git", "log", "--format=%s"], cwd=root, capture_output=True, text=True)
    assert log.stdout.splitlines() == ["Set up feedbackd workspace"]


def test_init_sample_adds_the_example_agents(tmp_path: Path) -> None:
    root = tmp_path / "sample"
    done = run_cli(["init", str(root), "--sample"])
    assert done.returncode == 0, done.stderr
    assert (root / "_data" / "agents" / "content-writer" / "queue" / "qi-101.json").is_file()
    doctor = run_cli(["-w", str(root), "doctor"])
    assert doctor.returncode == 0, doctor.stdout


def test_approve_and_reject_commands(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "old"}))
    site.write("w", "qi-2.yaml", "contentData:\n  t: meh\n")
    site.reconcile()
    site.write("w", "qi-1.json", draft({"t": "new"}))
    done = site.cli("approve", "w", "qi-1", "--curator", "Kim Editor <kim@example.org>")
    assert done.returncode == 0, done.stderr
    assert "approve(w): qi-1, 1 correction (t)" in done.stdout
    assert site.git("log", "-1", "--format=%an").strip() == "Kim Editor"
    done = site.cli("reject", "w", "qi-2", "--notes", "Too vague")
    assert done.returncode == 0, done.stderr
    assert (
        "rejectionFeedback: Too vague" in (site.agent("w") / "rejected" / "qi-2.yaml").read_text()
    )
    recent = json.loads(site.cli("recent", "w", "--json").stdout)
    assert recent["total"] == 2
    assert [e["type"] for e in recent["entries"]] == ["rejection", "correction"]


def test_errors_have_codes_and_exit_1(site: Site) -> None:
    (site.agent("w") / "queue").mkdir(parents=True)
    missing = site.cli("approve", "w", "qi-404")
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: not_found: no draft qi-404")
    bad_id = site.cli("approve", "w", "../etc")
    assert bad_id.returncode == 1 and bad_id.stderr.startswith("error: invalid_id: ")
    as_json = site.cli("recent", "bad id", "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stderr)["error"] == "invalid_id"


def test_bad_usage_exits_2(site: Site) -> None:
    assert site.cli("approve").returncode == 2
    assert site.cli("log", "--since", "7 parsecs").returncode == 2
    assert site.cli("no-such-command").returncode == 2


def test_config_errors_name_the_file_line_and_key(site: Site) -> None:
    site.configure("prompt:\n  max_exmples: 3\n")
    done = site.cli("recent", "w")
    assert done.returncode == 1
    assert "error: config_error: " in done.stderr
    assert "feedbackd.yaml, line 2" in done.stderr and "prompt.max_examples" in done.stderr


def test_no_workspace_is_a_clear_error(tmp_path: Path) -> None:
    done = run_cli(["recent", "w"], cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("error: workspace_error: ")


def test_record_appends_an_edit_once(site: Site) -> None:
    site.agent("w").mkdir(parents=True)
    payload = json.dumps({"type": "edit", "field": "alt", "original": "a", "corrected": "b"})
    first = site.cli("record", "w", "--json", payload)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["type"] == "edit"
    commits = site.commit_count()
    again = site.cli("record", "w", "--json", payload)
    assert again.returncode == 0 and "already recorded" in again.stderr
    assert site.commit_count() == commits
    assert "Original: a\nCorrected: b" in site.prompt("w")
    assert site.trailers()["Feedback-Event"] == ["record"]


@pytest.mark.parametrize(
    "payload",
    [
        '{"type": "praise"}',
        "[1]",
        "{",
        '{"type": "rejection", "notes": "too dry", "notes": "fine"}',
        '{"type": "rejection", "notes": "x", "n": ' + "[" * 2000 + "]" * 2000 + "}",
        '{"type": "rejection", "notes": "x", "n": ' + "9" * 5000 + "}",
    ],
)
def test_record_refuses_bad_entries(site: Site, payload: str) -> None:
    done = site.cli("record", "w", "--json", payload)
    assert done.returncode == 1 and done.stderr.startswith("error: invalid_feedback: ")
    assert not (site.agent("w") / "feedback.json").exists()


def test_log_lists_the_learning_history(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    site.write("v", "qi-2.json", draft({"t": "x"}, rejectionFeedback="no"), folder="rejected")
    site.reconcile()
    entries = json.loads(site.cli("log", "--json").stdout)
    # agents are reconciled in order of their ids, so w's approval is the newest commit; a new
    # agent's empty feedback files come first, in a commit of their own (no draft commit here)
    assert [(e["event"], e["agent"], e["item"]) for e in entries] == [
        ("approve", "w", "qi-1"),
        ("sync", "w", None),
        ("reject", "v", "qi-2"),
        ("sync", "v", None),
    ]
    assert entries[0]["fields"] == ["t"]
    assert entries[0]["curator"] == "Ada Curator <ada@example.org>"
    assert set(entries[0]) == {
        "commit", "date", "event", "agent", "item", "skill",
        "curator", "fields", "price_old", "price_new", "reverted", "reverts",
    }  # fmt: skip
    only_w = json.loads(site.cli("log", "w", "--since", "1d", "--json").stdout)
    assert [e["agent"] for e in only_w] == ["w", "w"]


def test_doctor_names_a_corrupt_feedback_file_and_its_last_good_version(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    site.reconcile()
    good = site.git("rev-parse", "--short=12", "HEAD").strip()
    (site.agent("w") / "feedback.json").write_text("[{broken")
    site.write("w", "qi-9.json", b"{nope", folder="queue")
    done = site.cli("doctor", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    paths = {problem["path"]: problem for problem in report["problems"]}
    assert good in paths["_data/agents/w/feedback.json"]["hint"]
    assert "_data/agents/w/queue/qi-9.json" in paths


def test_version() -> None:
    done = run_process(["--version"])  # what starts before the command line is loaded
    assert done.returncode == 0 and done.stdout.startswith("feedbackd ")


def test_doctor_reads_every_kind_of_file(site: Site) -> None:
    agent = site.agent("heavylift")
    (agent / "ratings" / "code-run").mkdir(parents=True)
    (agent / "ratings" / "code-run" / "2026-11.jsonl").write_text('{"rating": 5}\n')
    (agent / "SOUL.md").write_text("# H\n\n## Code Run\npricing: 5\n\n## code run!\n")
    (agent / "decisions.jsonl").write_text("not a record\n")
    (site.data / "inbox" / "ratings" / "r.json").write_text('{"rating": 9}')
    report = json.loads(site.cli("doctor", "--json").stdout)
    found = {problem["path"]: problem["message"] for problem in report["problems"]}
    assert "line 1 cannot be read" in found["_data/agents/heavylift/ratings/code-run/2026-11.jsonl"]
    assert "line 1 cannot be read" in found["_data/agents/heavylift/decisions.jsonl"]
    assert "code-run" in found["_data/agents/heavylift/SOUL.md"]
    assert "_data/inbox/ratings/r.json" in found
    human = site.cli("doctor")
    assert human.returncode == 1 and "4 problems in " in human.stdout


def test_doctor_fails_on_an_item_in_both_approved_and_rejected(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "a"}), folder="approved")
    site.write("w", "qi-1.md", "---\ntitle: a\n---\nbody\n", folder="rejected")
    done = site.cli("doctor", "--json")
    assert done.returncode == 1
    found = {p["path"]: p for p in json.loads(done.stdout)["problems"]}
    problem = found["_data/agents/w/rejected/qi-1.md"]
    assert "both approved/ and rejected/" in problem["message"]
    assert "keep one" in problem["hint"]


def test_doctor_names_a_file_where_a_folder_belongs_and_a_missing_repository(
    tmp_path: Path,
) -> None:
    root = tmp_path / "plain"
    (root / "_data" / "agents" / "w").mkdir(parents=True)
    (root / "_data" / "agents" / "w" / "approved").write_text("oops")
    done = run_cli(["-w", str(root), "doctor", "--json"])
    assert done.returncode == 1
    found = {p["path"]: p["message"] for p in json.loads(done.stdout)["problems"]}
    assert found["."] == "the workspace is not a git repository"
    assert "needs a folder" in found["_data/agents/w/approved"]


def test_status_after_scheduled_runs_tells_what_they_did(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
    assert site.cli("run", "--once").returncode == 0
    site.write("w", "qi-2.json", draft({"t": "x"}, rejectionFeedback="no"), folder="rejected")
    assert site.cli("run", "--once").returncode == 0
    assert site.cli("run", "--once").returncode == 0  # nothing new: the last event stays
    state = json.loads(site.cli("status", "--json").stdout)
    assert state["running"] is False and state["pid"] is None
    assert state["counts"] == {"approve": 1, "reject": 1, "sync": 1}  # sync: w's empty files
    assert state["last_event"]["event"] == "reject"
    assert state["last_event"]["summary"] == "qi-2"


@pytest.mark.parametrize(
    "command",
    [
        ["recent", "content-writr"],
        ["prompt", "content-writr"],
        ["approve", "content-writr", "qi-1"],
        ["reject", "content-writr", "qi-1", "--notes", "too long"],
        [
            "record",
            "content-writr",
            "--json",
            '{"type": "edit", "original": "a", "corrected": "b"}',
        ],
    ],
)
def test_an_agent_without_a_folder_is_not_found_with_the_closest_name(
    site: Site, command: list[str]
) -> None:
    site.write("content-writer", "qi-1.json", draft({"t": "a"}))
    site.reconcile()
    head = site.git("rev-parse", "HEAD")
    done = site.cli(*command)
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith("error: not_found: no agent content-writr"), done.stderr
    assert done.stderr == (
        "error: not_found: no agent content-writr in _data/agents/: did you mean content-writer?"
        " (a new agent starts with its folder: mkdir _data/agents/content-writr)\n"
    )
    assert not (site.data / "agents" / "content-writr").exists()
    assert site.git("rev-parse", "HEAD") == head  # nothing committed


def test_json_works_before_the_command_as_after_it(site: Site) -> None:
    before, after = site.cli("--json", "status"), site.cli("status", "--json")
    assert before.returncode == after.returncode == 0, before.stderr
    assert json.loads(before.stdout).keys() == json.loads(after.stdout).keys()
    missing = site.cli("--json", "recent", "nobody")
    assert missing.returncode == 1 and json.loads(missing.stderr)["error"] == "not_found"


def test_prompt_at_a_revision_or_a_date_is_the_snippet_read_then(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "first"}, {"t": "drafted"}), folder="approved")
    site.reconcile()
    then = site.git("rev-parse", "HEAD").strip()
    first = site.cli("prompt", "w").stdout
    site.write("w", "qi-2.json", draft({"t": "second"}, {"t": "drafted"}), folder="approved")
    site.reconcile()
    assert site.cli("prompt", "w").stdout != first
    assert site.cli("prompt", "w", "--at", then).stdout == first
    assert site.cli("prompt", "w", "--at", "HEAD~1").stdout == first
    assert site.cli("prompt", "w", "--at", "2999-01-01").stdout == site.cli("prompt", "w").stdout
    before = site.cli("prompt", "w", "--at", "2000-01-01")
    assert before.returncode == 1 and before.stderr.startswith("error: not_found: no commit")
    nonsense = site.cli("prompt", "w", "--at", "not a time")
    assert nonsense.returncode == 2 and "neither a revision nor a date" in nonsense.stderr


def test_forget_takes_one_lesson_back_and_nothing_brings_it_back(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "new", "u": "two"}, {"t": "old", "u": "one"}))
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    slip = next(e for e in site.feedback("w") if e["field"] == "u")
    done = site.cli("forget", "w", slip["id"], "--reason", "a slip of the curator")
    assert done.returncode == 0, done.stderr
    assert [e["field"] for e in site.feedback("w")] == ["t"]
    assert '"two"' not in site.prompt("w") and "Corrected: new" in site.prompt("w")
    assert site.git("log", "-1", "--format=%s").strip() == f"forget(w): {slip['id']}"
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["forget"] and trailers["Feedback-Agent"] == ["w"]
    assert (site.agent("w") / "approved" / "qi-1.json").exists()  # the decision stays
    forgotten = (site.agent("w") / "forgotten.jsonl").read_text()
    assert slip["id"] in forgotten and "a slip of the curator" in forgotten
    # A merge that brings the entry back (union by id) is undone by the next pass.
    feedback = site.agent("w") / "feedback.json"
    feedback.write_text(json.dumps([*site.feedback("w"), slip], indent=2) + "\n")
    site.git("commit", "-qam", "a merge from a clone that still had it")
    site.reconcile()
    assert [e["field"] for e in site.feedback("w")] == ["t"]
    assert site.git("log", "-1", "--format=%s").startswith("sync(w): drop 1 forgotten entry")
    assert site.git("status", "--porcelain") == ""


def test_forget_an_unknown_entry_is_not_found(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"t": "new"}, {"t": "old"}), folder="approved")
    site.reconcile()
    head = site.git("rev-parse", "HEAD")
    done = site.cli("forget", "w", "fb-nope")
    assert done.returncode == 1 and done.stderr.startswith("error: not_found: no entry fb-nope")
    assert site.git("rev-parse", "HEAD") == head


def on_a_terminal(command: list[str]) -> tuple[int, str]:
    """Run a command with stdout and stderr on a pseudo-terminal, as in a user's shell: its exit
    code and everything it wrote there."""
    main, secondary = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=secondary, stderr=secondary, env=env
    )
    os.close(secondary)
    written = bytearray()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], deadline - time.monotonic())
            try:
                chunk = os.read(main, 65536) if ready else b""
            except OSError:  # EIO: the command ended and closed its side of the terminal
                break
            if ready and not chunk:
                break
            written += chunk
    finally:
        os.close(main)
    return process.wait(timeout=30), written.decode("utf-8", errors="replace")


def test_run_once_shows_a_progress_bar_on_a_terminal_and_nothing_elsewhere(site: Site) -> None:
    for agent in ("a1", "a2", "a3"):
        site.write(agent, "qi-1.json", draft({"title": f"Draft of {agent}"}))
    command = [sys.executable, "-m", "feedbackd", "-w", str(site.root), "run", "--once"]
    status, shown = on_a_terminal(command)
    assert status == 0, shown
    assert "reconciling agents" in shown
    site.write("a1", "qi-2.json", draft({"title": "Another draft"}))
    piped = site.cli("run", "--once")  # its output captured: no terminal
    assert piped.returncode == 0, piped.stderr
    assert "reconciling agents" not in piped.stdout + piped.stderr
    assert "draft(a1)" in piped.stdout + piped.stderr  # the report itself is there


def test_the_first_submit_after_a_fresh_clone_shows_its_indexing_on_a_terminal(
    site: Site,
) -> None:
    history = site.agent("prov") / "ratings" / "code-run" / "2026-01.jsonl"
    history.parent.mkdir(parents=True)
    line = (
        '{{"transaction_id": "{tx}", "provider_agent": "prov", "skill_id": "code-run", '
        '"requester_agent": "buyer", "rating": 4, "result_quality": "good", '
        '"would_reuse": true, "cost_value_ratio": "fair", '
        '"timestamp": "2026-01-05T10:00:00.000Z"}}\n'
    )
    history.write_text("".join(line.format(tx=uuid.UUID(int=n)) for n in range(1, 20001)))
    rating = {
        "provider_agent": "prov", "skill_id": "code-run", "rating": 5, "result_quality": "good",
        "would_reuse": True, "cost_value_ratio": "fair",
    }  # fmt: skip

    def submit(number: int) -> list[str]:
        doc = {"transaction_id": str(uuid.UUID(int=10**6 + number)), **rating}
        return ["feedback", "submit", "--as", "buyer", "--json", json.dumps(doc)]

    command = [sys.executable, "-m", "feedbackd", "-w", str(site.root)]
    status, shown = on_a_terminal([*command, *submit(1)])
    assert status == 0, shown
    assert "indexing ratings" in shown and '"status": "recorded"' in shown
    piped = site.cli(*submit(2))
    assert piped.returncode == 0, piped.stderr
    assert "indexing ratings" not in piped.stdout + piped.stderr
    assert json.loads(piped.stdout)["status"] == "recorded"
    assert json.loads(site.cli("reputation", "prov", "--json").stdout)["feedback_count"] == 20002


def test_discovery_finds_only_real_workspaces_never_a_folder_that_merely_holds_data(
    tmp_path: Path,
) -> None:
    """Run from the source checkout's root (which holds a sample `_data/`), a command must not
    commit into that repository: only a folder with feedbackd.yaml is a workspace."""
    checkout = tmp_path / "checkout"
    (checkout / "_data" / "agents" / "content-writer" / "queue").mkdir(parents=True)
    git(tmp_path, "init", "-q", str(checkout))
    draft_file = checkout / "_data" / "agents" / "content-writer" / "queue" / "qi-101.json"
    draft_file.write_text(json.dumps(draft({"title": "Sample"})))
    env = {k: v for k, v in os.environ.items() if k != "FEEDBACKD_WORKSPACE"}
    inside = run_cli(["approve", "content-writer", "qi-101"], cwd=checkout / "_data", env=env)
    assert inside.returncode == 1
    assert inside.stderr.strip() == (
        "error: workspace_error: no feedbackd workspace here (run feedbackd init, or pass -w)"
    )
    assert draft_file.exists()  # nothing moved, nothing committed
    workspace = tmp_path / "ws"
    Site(workspace)
    found = run_cli(["status", "--json"], cwd=workspace / "_data", env=env)
    assert found.returncode == 0, found.stderr


def test_deciding_an_item_already_decided_says_where_it_is_and_when(site: Site) -> None:
    site.write("w", "qi-102.json", draft({"t": "drafted"}))
    site.reconcile()
    site.move("w", "qi-102.json", "rejected")  # the curator's mv, then the command out of habit
    site.reconcile()
    done = site.cli("reject", "w", "qi-102", "--notes", "Too generic")
    assert done.returncode == 1
    message = done.stderr.strip()
    assert message.startswith("error: already_decided: qi-102 was already rejected on ")
    assert message.endswith(
        " UTC; to decide it again, move _data/agents/w/rejected/qi-102.json back to"
        " _data/agents/w/queue/"
    )
    assert "(" not in message and "no draft" not in message


def test_sync_without_a_remote_is_an_error_that_says_how_to_set_one(site: Site) -> None:
    done = site.cli("sync")
    assert done.returncode == 1
    assert done.stderr.startswith("error: config_error: no remote to sync with: git.remote")
    assert "git remote add origin URL" in done.stderr
    as_json = site.cli("sync", "--json")
    assert json.loads(as_json.stderr)["error"] == "config_error"


def test_feedback_submit_help_lists_every_field_and_an_example(site: Site) -> None:
    shown = site.cli("feedback", "submit", "--help").stdout
    for field in ALLOWED:
        assert f"{field}:" in shown, field
    assert "one of great, fair, overpriced" in shown and "Example: --json" in shown


def test_reputation_numbers_say_what_they_cover(site: Site) -> None:
    unrated = site.cli("reputation", "nobody-yet").stdout
    assert "0.5: never rated, so the starting value (reputation.cold_start" in unrated
    rating = {
        "transaction_id": "123e4567-e89b-12d3-a456-426614174000",
        "provider_agent": "prov", "skill_id": "code-run", "rating": 4,
        "result_quality": "good", "would_reuse": True, "cost_value_ratio": "fair",
    }  # fmt: skip
    assert (
        site.cli("feedback", "submit", "--as", "buyer", "--json", json.dumps(rating)).returncode
        == 0
    )
    rated = site.cli("reputation", "prov").stdout
    assert "confidence" in rated and "total weight, each counting less as it ages" in rated
    listed = site.cli("feedback", "list", "--skill", "code-run").stdout
    assert "the reputation of these ratings only" in listed
    assert "average None" not in site.cli("feedback", "list", "--skill", "nothing").stdout


def test_an_approval_that_changed_only_outside_the_content_warns_naming_the_fields(
    site: Site,
) -> None:
    """A curator who edited a top-level `title` of a JSON draft (not contentData.title) is told
    why nothing was recorded, on stderr and in --json's warnings; the approval still stands."""
    site.write("w", "qi-1.json", draft({"title": "Old"}, slug="old-slug"))
    site.write("w", "qi-2.md", "---\nslug: a\ntitle: T\n---\nBody\n")
    site.reconcile()
    site.write("w", "qi-1.json", draft({"title": "Old"}, slug="new-slug", title="New"))
    done = site.cli("approve", "w", "qi-1")
    assert done.returncode == 0, done.stderr
    assert "approve(w): qi-1, no corrections" in done.stdout
    warning = next(line for line in done.stderr.splitlines() if "qi-1.json" in line)
    assert warning.startswith("warning: ")
    assert "slug, title changed outside contentData" in warning
    assert "contentData.title" in warning

    site.write("w", "qi-2.md", "---\nslug: b\ntitle: T\n---\nBody\n")
    done = site.cli("approve", "w", "qi-2", "--json")
    assert done.returncode == 0, done.stderr
    (warning,) = json.loads(done.stdout)["warnings"]
    assert "qi-2.md: approved with no corrections" in warning
    assert "slug changed" in warning and "front matter" in warning


def test_an_approval_with_corrections_or_untouched_warns_of_nothing(site: Site) -> None:
    site.write("w", "qi-1.json", draft({"title": "Old"}, slug="s"))
    site.write("w", "qi-2.json", draft({"title": "Old"}, slug="s"))
    site.reconcile()
    site.write("w", "qi-1.json", draft({"title": "New"}, slug="s2"))
    assert site.cli("reject", "w", "qi-2", "--notes", "Too dry").returncode == 0
    site.move("w", "qi-2.json", "queue", source="rejected")  # a second thought: its note stays
    for item in ("qi-1", "qi-2"):
        done = site.cli("approve", "w", item, "--curator", "Kim Editor <kim@example.org>")
        assert done.returncode == 0 and "warning" not in done.stderr, done.stderr


# --- the learning history as people read it ----------------------------------------------------
DATE = re.compile(r"\d{4}-\d\d-\d\d")


def log_rows(
    stdout: str, starts: Callable[[list[str]], bool] = lambda cells: bool(DATE.match(cells[0]))
) -> list[dict[str, str]]:
    """`feedbackd log`'s table as rows of column → text, each cell's wrapped lines joined with
    no space between them (a name folded over two lines reads whole again). A row starts on the
    line whose cells `starts` (by default: with a date)."""
    lines = [line for line in stdout.splitlines() if "│" in line or "┃" in line]
    header = [cell.strip() for cell in lines[0].split("┃")]
    rows: list[dict[str, str]] = []
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.split("│")]
        if starts(cells):  # lines continue it
            rows.append(dict.fromkeys(header, ""))
        for column, cell in zip(header, cells, strict=True):
            rows[-1][column] += cell
    return rows


def submit_overpriced(site: Site, provider: str, skill: str, buyers: list[str]) -> None:
    soul = f"# Prov\n\nDoes things.\n\n## {skill}\nRuns code.\n\npricing: 20\n"
    (site.agent(provider)).mkdir(parents=True, exist_ok=True)
    (site.agent(provider) / "SOUL.md").write_text(soul)
    for buyer in buyers:
        record = {
            "transaction_id": str(uuid.uuid4()), "provider_agent": provider, "skill_id": skill,
            "rating": 3, "result_quality": "acceptable", "would_reuse": False,
            "cost_value_ratio": "overpriced",
        }  # fmt: skip
        done = site.cli("feedback", "submit", "--as", buyer, "--json", json.dumps(record))
        assert done.returncode == 0, done.stderr


def test_log_names_curators_only_for_their_decisions_and_shows_the_rejection_note(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    site.write("w", "qi-1.json", draft({"t": "old"}))
    site.write("w", "qi-2.json", draft({"t": "meh"}))
    site.reconcile()
    kim = ("--curator", "Kim Editor <kim@example.org>")
    assert site.cli("approve", "w", "qi-1", *kim).returncode == 0
    note = "Too vague: name one real project, what it cost and what it saved"
    assert site.cli("reject", "w", "qi-2", "--notes", note, *kim).returncode == 0
    submit_overpriced(site, "prov", "code-run", ["buyer-a", "buyer-b", "buyer-a"])
    rows = {(row["event"], row["item/skill"]): row for row in log_rows(site.cli("log").stdout)}
    assert rows[("approve", "qi-1")]["curator"] == "Kim Editor"
    rejected = rows[("reject", "qi-2")]
    assert rejected["curator"] == "Kim Editor"
    assert rejected["what"].replace(" ", "").startswith('qi-2:"Toovague:nameonereal')
    # Ratings come from their buyers and a price change from feedbackd: no curator took part.
    assert rows[("rating", "code-run")]["curator"] == ""
    assert "buyer-a" in rows[("rating", "code-run")]["what"]
    assert rows[("pricing", "code-run")]["curator"] == ""


def test_log_cuts_no_name_at_80_columns(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    agent, skill = "heavylift-chengwen-eu-west-2", "claude-code-run-with-tests"
    curator = "Maximiliane Kowalczyk-Oyelaran"
    item = "queue-item-20261203-0001"
    site.write(agent, f"{item}.json", draft({"t": "old"}))
    site.reconcile()
    site.write(agent, f"{item}.json", draft({"t": "new"}))
    done = site.cli("approve", agent, item, "--curator", f"{curator} <m@x.org>")
    assert done.returncode == 0, done.stderr
    submit_overpriced(site, agent, skill, ["buyer-a", "buyer-b", "buyer-a"])
    shown = site.cli("log").stdout
    assert "…" not in shown
    assert all(len(line) <= 80 for line in shown.splitlines())
    # The curator and the date, missed least, made room; names this long are still folded.
    rows = log_rows(shown, starts=lambda cells: bool(cells[0]))
    assert "curator" not in rows[0] and "date" not in rows[0]
    assert {row["agent"] for row in rows} == {agent}
    assert {row["item/skill"] for row in rows if row["event"] != "draft"} == {item, skill}
    # Asked about one agent, the table leaves the agent column out: the date fits again, and
    # each name is whole on one line.
    shown = site.cli("log", agent).stdout
    rows = log_rows(shown)
    assert "agent" not in rows[0] and {row["item/skill"] for row in rows} >= {item, skill}
    assert all(any(f"│ {name} " in line for line in shown.splitlines()) for name in (item, skill))
    monkeypatch.setenv("COLUMNS", "160")
    approval = next(row for row in log_rows(site.cli("log").stdout) if row["event"] == "approve")
    assert approval["curator"] == curator and approval["agent"] == agent  # whole on a line


@pytest.mark.parametrize(
    "command",
    [(), ("approve",), ("log",), ("run",), ("feedback", "submit"), ("optimize",), ("status",)],
    ids=lambda command: " ".join(command) or "feedbackd",
)
def test_help_shows_no_value_after_a_plain_flag(site: Site, command: tuple[str, ...]) -> None:
    """`--json`, `--quiet`, `--help` take no value: the help shows none (no `<bool>`)."""
    done = site.cli(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert "--help" in done.stdout and "bool" not in done.stdout.lower(), done.stdout


def test_a_yaml_mistake_in_front_matter_gets_a_hint_about_that_mistake(site: Site) -> None:
    """An unquoted `: ` in a title is the usual slip; anchors and tags are another matter."""
    site.write("w", "qi-1.md", "---\ntitle: Postgres: five indexes\n---\nBody\n")
    site.write("w", "qi-2.md", "---\ntitle: &t Postgres\nexcerpt: *t\n---\nBody\n")
    done = site.cli("approve", "w", "qi-1")
    assert done.returncode == 1
    assert done.stderr.startswith("error: invalid_item: ") and "(line 2, column 16)" in done.stderr
    assert "front matter" in done.stderr and "quotes" in done.stderr
    assert "anchor" not in done.stderr and "tags" not in done.stderr
    assert (site.agent("w") / "queue" / "qi-1.md").exists()  # nothing moved
    done = site.cli("approve", "w", "qi-2")
    assert done.returncode == 1 and "anchor &t is not allowed" in done.stderr
    assert "write each value out in full" in done.stderr


def test_doctor_reports_ledger_lines_lost_whose_decisions_git_holds(site: Site) -> None:
    for item in ("qi-1", "qi-2", "qi-3"):
        site.write("w", f"{item}.json", draft({"t": "b"}, {"t": "a"}), folder="approved")
        site.reconcile()
    ledger = site.agent("w") / "decisions.jsonl"
    lines = ledger.read_text().splitlines(keepends=True)
    ledger.write_text(lines[0] + "{damaged\n" + lines[2])  # qi-2's line damaged
    commits = site.commit_count()
    done = site.cli("doctor", "--json")
    assert done.returncode == 1
    found = [p for p in json.loads(done.stdout)["problems"] if "git holds" in p["message"]]
    assert [p["path"] for p in found] == ["_data/agents/w/decisions.jsonl"]
    assert "qi-2" in found[0]["message"] and "qi-1" not in found[0]["message"]
    assert "run --once" in found[0]["hint"] and "git checkout HEAD --" in found[0]["hint"]
    ledger.unlink()
    found = [
        p for p in json.loads(site.cli("doctor", "--json").stdout)["problems"]
        if "git holds" in p["message"]
    ]  # fmt: skip
    assert all(item in found[0]["message"] for item in ("qi-1", "qi-2", "qi-3"))
    assert "3 decisions" in found[0]["message"]
    assert site.commit_count() == commits and not ledger.exists()  # doctor changed nothing


def test_reject_credits_the_curator_it_is_given_as_approve_does(site: Site) -> None:
    site.write("w", "qi-c1.json", draft({"title": "One"}))
    site.write("w", "qi-c2.json", draft({"title": "Two"}))
    site.reconcile()
    ada, kim = "Ada Lovelace <ada@example.org>", "Kim Editor <kim@example.org>"
    assert site.cli("reject", "w", "qi-c1", "--notes", "Too dry", "--curator", ada).returncode == 0
    assert site.git("log", "-1", "--format=%an <%ae>").strip() == ada
    assert site.cli("approve", "w", "qi-c2", "--curator", kim).returncode == 0
    assert site.git("log", "-1", "--format=%an <%ae>").strip() == kim

"""Checks of the contract (SPEC.md) from the outside: the `feedbackd` command line and git.

Each test drives `python -m feedbackd -w ROOT ...` against a workspace made by `feedbackd init` in
tmp_path, the way a user's script would, and imports nothing from the package except the Python
API the contract names (`feedbackd.load_feedback_for_prompt`). The command runs in this process
(tests/cli_kit.py: the same arguments, environment, outputs and exit code as a process of its
own, which tests/cli/test_cli_kit.py holds it to); the process boundary itself is tested where it is
the point. The checks focus on promises the other suites do not pin down: output shapes and key
names, error formats and exit codes, file formats, commit messages, and text from files that
must be shown, never interpreted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.cli_kit import run_cli

FB_ID = re.compile(r"^fb-\d{13}-[a-z0-9]{6}$")
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ERROR_LINE = re.compile(r"^error: [a-z_]+: .+")


class Site:
    """A workspace made by `feedbackd init`, used only through the command line and git."""

    def __init__(self, root: Path) -> None:
        self.root = root
        done = self.run("init", str(root))
        assert done.returncode == 0, done.stderr

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run_cli(
            ["-w", str(self.root), *args], cwd=self.root, env={**os.environ, **(env or {})}
        )

    def ok(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = self.run(*args, env=env)
        assert done.returncode == 0, f"feedbackd {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args))

    def agent(self, agent: str) -> Path:
        return self.root / "_data" / "agents" / agent

    def write(self, agent: str, folder: str, name: str, doc: Any) -> Path:
        path = self.agent(agent) / folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=2) + "\n")
        return path

    def configure(self, text: str) -> None:
        (self.root / "feedbackd.yaml").write_text(text)

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.root, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def trailers(self, commit: str = "HEAD") -> dict[str, list[str]]:
        message = self.git("log", "-1", "--format=%B", commit)
        parsed = subprocess.run(
            ["git", "interpret-trailers", "--parse"], input=message, capture_output=True, text=True
        ).stdout
        found: dict[str, list[str]] = {}
        for line in parsed.splitlines():
            key, _, value = line.partition(":")
            found.setdefault(key.strip(), []).append(value.strip())
        return found


@pytest.fixture
def site(tmp_path: Path) -> Site:
    root = tmp_path / "site"
    root.mkdir()
    return Site(root)


def rating(**over: Any) -> dict[str, Any]:
    """The requester example of the seed document, with a fresh transaction id."""
    record: dict[str, Any] = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": "heavylift",
        "skill_id": "claude-code-run",
        "requester_agent": "genesis-bot",
        "rating": 5,
        "latency_ms": 28500,
        "result_quality": "excellent",
        "quality_details": "Code executed correctly",
        "would_reuse": True,
        "cost_value_ratio": "great",
    }
    record.update(over)
    return record


# --- §2 workspace and init ------------------------------------------------------------------


def test_init_writes_ignores_attributes_driver_and_commits_as_feedbackd(site: Site) -> None:
    ignored = (site.root / ".gitignore").read_text().splitlines()
    assert "/.feedbackd/" in ignored and "*.error" in ignored
    attributes = (site.root / ".gitattributes").read_text()
    assert "feedback.json merge=feedbackd" in attributes and "*.jsonl merge=feedbackd" in attributes
    driver = site.git("config", "merge.feedbackd.driver")
    assert "merge-driver %O %A %B %P" in driver
    assert (site.root / "_data" / "agents").is_dir()
    assert site.git("log", "-1", "--format=%cn <%ce>").strip() == "feedbackd <feedbackd@localhost>"
    assert site.git("status", "--porcelain") == ""


def test_init_on_a_file_is_a_workspace_error(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("not a folder\n")
    done = subprocess.run(
        [sys.executable, "-m", "feedbackd", "init", str(taken)], capture_output=True, text=True
    )
    assert done.returncode == 1 and done.stderr.startswith("error: workspace_error: ")
    assert taken.read_text() == "not a folder\n"


# --- §3 unreadable files ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("q1.json", '{"contentData": {"t": "a",}}', "(line 1, column"),
        ("q2.yaml", "contentData:\n  t: [a\n", "(line "),
        ("q3.yaml", "contentData: &a {}\nagain: *a\n", "(line 1, column"),
        ("q4.json", '{"contentData": {"t": "a"}, "id": "other"}', ""),
    ],
)
def test_an_error_file_has_exactly_two_lines(site: Site, name: str, text: str, where: str) -> None:
    site.configure("daemon:\n  settle_ms: 0\n")
    bad = site.write("w", "approved", name, text)
    site.ok("run", "--once")
    assert bad.read_text() == text
    lines = (bad.parent / f"{name}.error").read_text().split("\n")
    assert len(lines) == 3 and lines[2] == "", lines
    assert lines[0].startswith("feedbackd: ") and where in lines[0]
    assert lines[1] and not lines[1].startswith("feedbackd")


def test_half_a_character_pair_is_refused_not_a_crash(site: Site) -> None:
    site.configure("daemon:\n  settle_ms: 0\n")
    text = '{"contentData": {"t": "\\ud800 new"}, "originalContentData": {"t": "old"}}\n'
    item = site.write("w", "approved", "qi-1.json", text)
    inbox = site.root / "_data" / "inbox" / "ratings" / "r.json"
    inbox.write_text(json.dumps(rating(quality_details="\ud800")))
    site.ok("run", "--once")
    assert item.read_text() == text and inbox.exists()
    assert "\\ud800" in (item.parent / "qi-1.json.error").read_text()
    assert (inbox.parent / "r.json.error").read_text().startswith("feedbackd: ")
    payload = '{"type": "edit", "original": "\\ud800", "corrected": "y"}'
    done = site.run("record", "w", "--json", payload)
    assert done.returncode == 1 and done.stderr.startswith("error: invalid_feedback: ")


# --- §4 and §5 feedback, snippets and the Python API --------------------------------------------


def test_decision_entries_snippet_and_python_api_agree(site: Site) -> None:
    site.configure("prompt:\n  show_field: true\n")
    original = {"title": "Old", "seo": {"metaTitle": "M1"}, "n": 1, "tags": ["a"]}
    corrected = {"title": "New", "seo": {"metaTitle": "M2"}, "n": 2, "tags": ["b"]}
    site.write(
        "cw", "approved", "qi-1.json", {"contentData": corrected, "originalContentData": original}
    )
    site.ok("run", "--once")
    entries = json.loads((site.agent("cw") / "feedback.json").read_text())
    assert [(e["field"], e["original"], e["corrected"]) for e in entries] == [
        ("title", "Old", "New"),
        ("seo.metaTitle", "M1", "M2"),
    ]
    for entry in entries:
        assert set(entry) == {
            "id",
            "type",
            "queueItemId",
            "field",
            "original",
            "corrected",
            "createdAt",
        }
        assert FB_ID.match(entry["id"]) and ISO_MS.match(entry["createdAt"])
    snippet = (site.agent("cw") / "prompt" / "feedback.md").read_text()
    assert snippet.startswith("## Learn from past corrections\nExample 1 (title):\n")
    assert "Example 2 (seo.metaTitle):\nOriginal: M1\nCorrected: M2\n" in snippet
    assert site.ok("prompt", "cw") == snippet
    code = (
        "import json, sys, feedbackd\n"
        "examples = feedbackd.load_feedback_for_prompt('cw', limit=1, workspace=sys.argv[1])\n"
        "print(json.dumps(examples))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(site.root)], capture_output=True, text=True, check=True
    )
    assert json.loads(done.stdout) == [
        {"original": "M1", "corrected": "M2", "field": "seo.metaTitle"}
    ]


def test_recent_json_is_entries_newest_first_and_a_total(site: Site) -> None:
    site.agent("w").mkdir()
    for notes in ("one", "two", "three"):
        site.ok("record", "w", "--json", json.dumps({"type": "rejection", "notes": notes}))
    out = site.json("recent", "w", "--limit", "2", "--json")
    assert set(out) == {"entries", "total"} and out["total"] == 3
    assert [entry["notes"] for entry in out["entries"]] == ["three", "two"]
    site.agent("no-feedback-yet").mkdir()
    assert site.json("recent", "no-feedback-yet", "--json") == {"entries": [], "total": 0}
    unknown = site.run("recent", "nobody", "--json")
    assert unknown.returncode == 1 and json.loads(unknown.stderr)["error"] == "not_found"


# --- §6 ratings, reputation, pricing ------------------------------------------------------------


def test_feedback_list_and_reputation_json_shapes(site: Site) -> None:
    site.ok("feedback", "submit", "--json", json.dumps(rating()))
    site.ok("feedback", "submit", "--json", json.dumps(rating(rating=1, result_quality="failed")))
    listed = site.json("feedback", "list", "--skill", "claude-code-run", "--since", "7d", "--json")
    assert set(listed) == {
        "skill_id", "agent_id", "since", "count", "feedbacks", "average_rating",
        "quality_counts", "would_reuse_ratio", "overpriced_ratio", "reputation_score",
    }  # fmt: skip
    assert listed["count"] == 2 and listed["average_rating"] == 3
    assert [f["rating"] for f in listed["feedbacks"]] == [1, 5]  # newest first
    reputation = site.json("reputation", "heavylift", "--json")
    keys = {"reputation_score", "feedback_count", "last_updated", "confidence"}
    assert set(reputation) == {"agent_id", "skills"} | keys
    assert set(reputation["skills"]["claude-code-run"]) >= keys
    assert reputation["feedback_count"] == 2 and 0.9 < reputation["confidence"] <= 2
    unknown = site.json("reputation", "never-seen", "--json")
    assert unknown["reputation_score"] == 0.5 and unknown["feedback_count"] == 0


def test_the_rating_commit_names_skill_and_transaction(site: Site) -> None:
    record = rating(provider_agent="prov", skill_id="code-run")
    site.ok("feedback", "submit", "--json", json.dumps(record))
    month = site.git("log", "-1", "--format=%s%n", "--name-only")
    assert month.startswith("rating(prov/code-run): ")
    trailers = site.trailers()
    assert trailers["Feedback-Event"] == ["rating"] and trailers["Feedback-Skill"] == ["code-run"]
    assert trailers["Feedback-Transaction"] == [record["transaction_id"]]
    assert "_data/agents/prov/ratings/code-run/" in month


def test_a_price_cut_edits_one_line_and_commits_the_prices(site: Site) -> None:
    soul = "# Prov\n\nDoes things.\n\n## Code Run!\nRuns code.\n\npricing: 20\n\n## Other\nx\n"
    site.write("prov", "", "SOUL.md", soul)
    site.git("add", "-A")
    site.git("commit", "-qm", "persona")
    for number in range(3):  # from two buyers: one alone never moves a price
        record = rating(provider_agent="prov", skill_id="code-run", cost_value_ratio="overpriced")
        record["requester_agent"] = f"buyer-{number % 2}"
        site.ok("feedback", "submit", "--json", json.dumps(record))
    assert (site.agent("prov") / "SOUL.md").read_text() == soul.replace(
        "pricing: 20", "pricing: 19"
    )
    pricing = site.json("log", "prov", "--json")[0]
    assert (pricing["event"], pricing["skill"]) == ("pricing", "code-run")
    trailers = site.trailers(pricing["commit"])
    assert trailers["Price-Old"] == ["20"] and trailers["Price-New"] == ["19"]
    memory = site.json("memory", "prov", "--category", "patterns", "--json")
    assert [(m["category"], m["importance"]) for m in memory] == [("patterns", 0.6)]
    assert set(memory[0]) == {
        "id", "category", "importance", "content", "subject", "source", "createdAt",
    }  # fmt: skip


# --- §8 git log ------------------------------------------------------------------------------


def test_log_json_keys_and_filters(site: Site) -> None:
    site.agent("a").mkdir()
    site.agent("b").mkdir()
    site.ok("record", "a", "--json", json.dumps({"type": "rejection", "notes": "n"}))
    site.ok(
        "record", "b", "--json", json.dumps({"type": "edit", "original": "x", "corrected": "y"})
    )
    everything = site.json("log", "--json")
    # Each new agent's first record comes after a commit of its empty feedback files.
    assert [(entry["agent"], entry["event"]) for entry in everything] == [
        ("b", "record"), ("b", "sync"), ("a", "record"), ("a", "sync"),
    ]  # fmt: skip
    # The contract's keys, and whether a `git revert` undid the commit (or, on a revert's own
    # row, which commit it undid).
    assert set(everything[0]) == {
        "commit", "date", "event", "agent", "item", "skill",
        "curator", "fields", "price_old", "price_new", "reverted", "reverts",
    }  # fmt: skip
    assert everything[0]["price_old"] is None and everything[0]["item"] is None
    assert everything[0]["reverted"] is False and everything[0]["reverts"] is None
    assert everything[0]["curator"] == "Ada Curator <ada@example.org>"
    assert [entry["agent"] for entry in site.json("log", "a", "--since", "12h", "--json")] == [
        "a",
        "a",
    ]


# --- §10 commands: errors, exit codes, durations, output ----------------------------------------


def test_refusals_say_code_and_message_on_stderr(site: Site) -> None:
    done = site.run("approve", "w", "missing")
    assert done.returncode == 1 and ERROR_LINE.match(done.stderr) and done.stdout == ""
    done = site.run("approve", "../w", "x", "--json")
    assert done.returncode == 1
    assert set(json.loads(done.stderr)) == {"error", "message"}
    assert json.loads(done.stderr)["error"] == "invalid_id"


@pytest.mark.parametrize(
    "args",
    [
        ("no-such-command",),
        ("approve",),
        ("recent", "w", "--limit", "0"),
        ("feedback", "list"),
        ("log", "--since", "7 parsecs"),
        ("log", "--since", "99999999999999w"),
    ],
)
def test_bad_usage_exits_2_with_an_error_line(site: Site, args: tuple[str, ...]) -> None:
    done = site.run(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: usage: "), done.stderr
    as_json = site.run(*args, "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stderr)["error"] == "usage"


@pytest.mark.parametrize("duration", ["30s", "15m", "12h", "7d", "4w"])
def test_every_duration_unit_is_understood(site: Site, duration: str) -> None:
    listed = site.json("feedback", "list", "--skill", "s", "--since", duration, "--json")
    assert listed["count"] == 0 and listed["reputation_score"] == 0.5


def test_version_quiet_and_no_decoration_off_a_terminal(site: Site) -> None:
    assert re.match(r"^feedbackd \d+\.\d+", site.ok("--version"))
    site.configure("daemon:\n  settle_ms: 0\n")  # the draft below is decided at once
    site.write("w", "queue", "qi-1.json", {"contentData": {"t": "a"}})
    assert site.ok("--quiet", "run", "--once") == ""
    site.ok(
        "record", "w", "--json", json.dumps({"type": "edit", "original": "a", "corrected": "b"})
    )
    forced = {"FORCE_COLOR": "1", "NO_COLOR": "1", "TERM": "xterm-256color"}
    for args in (("recent", "w"), ("log",), ("status",)):
        assert "\x1b[" not in site.ok(*args, env=forced), args


def test_text_from_files_is_shown_never_interpreted(site: Site) -> None:
    site.agent("w").mkdir()
    notes = "[/] broke [bold]this[/bold] [link=x]"
    site.ok("record", "w", "--json", json.dumps({"type": "rejection", "notes": notes}))
    site.ok(
        "record", "w", "--json", json.dumps({"type": "edit", "original": "[/]", "corrected": "[b]"})
    )
    site.ok("feedback", "submit", "--json", json.dumps(rating(quality_details=notes)))
    wide = {"COLUMNS": "300"}  # one table row per line
    recent = site.ok("recent", "w", env=wide)
    assert notes in recent and "[b]" in recent
    site.ok("log")
    assert notes in site.ok("feedback", "list", "--skill", "claude-code-run", env=wide)
    assert notes in site.ok("memory", "genesis-bot", env=wide)


def test_status_json_keys_and_problems_left_by_a_pass(site: Site) -> None:
    site.configure("daemon:\n  settle_ms: 0\n")
    bad = site.write("w", "approved", "qi-9.json", "{")
    site.ok("run", "--once")
    state = site.json("status", "--json")
    assert set(state) == {
        "running", "pid", "uptime_s", "last_event", "counts", "pending", "problems",
        "starting",  # a running daemon still in its start-up pass
        "events",  # webhooks: deliveries owed and the last error (SPEC section 17)
        "agents",  # per agent, drafts in review/ and disputed/ (SPEC section 15)
    }  # fmt: skip
    assert state["running"] is False and state["pid"] is None and state["uptime_s"] is None
    where = bad.relative_to(site.root).as_posix()  # no path of the server's disk
    assert any(problem.startswith(f"{where}: ") for problem in state["problems"])
    bad.write_text(json.dumps({"contentData": {"t": "a"}}))
    site.ok("run", "--once")
    # The file's problem is gone; what its decision warns of stays until the agent's next one.
    assert site.json("status", "--json")["problems"] == [
        f"{where}: never seen in queue/ and no originalContentData; approved with no corrections"
    ]


def test_warnings_of_a_pass_are_shown(site: Site, tmp_path: Path) -> None:
    item = {"contentData": {"t": "a"}}
    site.write("w", "approved", "qi-1.json", item)
    site.write("w", "rejected", "qi-1.json", item)
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(item))
    (site.agent("w") / "queue").mkdir()
    (site.agent("w") / "queue" / "qi-2.json").symlink_to(outside)
    done = site.run("run", "--once")
    assert done.returncode == 0
    assert "in both approved/ and rejected/" in done.stderr
    assert "symbolic link leads outside the workspace" in done.stderr

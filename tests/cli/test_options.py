"""The global options a user moves around: `-w/--workspace` and `--json` work before or after
the command, and every command that prints for a reader prints JSON with `--json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_kit import run_cli
from tests.workspace_kit import Site, draft


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path / "ws")
    site.write("w", "qi-1.json", draft({"t": "first", "u": "one"}, {"t": "drafted", "u": "1"}))
    site.move("w", "qi-1.json", "approved")
    site.reconcile()
    return site


@pytest.mark.parametrize(
    "args",
    [
        ["recent", "w", "-w", "{root}"],
        ["recent", "-w", "{root}", "w"],
        ["recent", "w", "--workspace", "{root}"],
        ["recent", "w", "--workspace={root}"],
        ["log", "w", "-w", "{root}"],
        ["prompt", "w", "-w", "{root}"],
        ["status", "-w", "{root}"],
        ["feedback", "list", "--skill", "s", "-w", "{root}"],
        ["feedback", "-w", "{root}", "list", "--skill", "s"],
        ["feedback", "--workspace={root}", "list", "--skill", "s", "--json"],
        ["stats", "w", "-w", "{root}"],
    ],
    ids=lambda args: " ".join(args),
)
def test_the_workspace_option_works_after_the_command(
    site: Site, tmp_path: Path, args: list[str]
) -> None:
    elsewhere = tmp_path / "elsewhere"  # no workspace around it: -w alone finds it
    elsewhere.mkdir()
    after = run_cli([arg.format(root=site.root) for arg in args], cwd=elsewhere)
    assert after.returncode == 0, after.stderr
    before = run_cli(["-w", str(site.root), *without_workspace(args)], cwd=elsewhere)
    assert before.returncode == 0, before.stderr
    assert after.stdout == before.stdout


def without_workspace(args: list[str]) -> list[str]:
    at = next(n for n, arg in enumerate(args) if "{root}" in arg)
    return args[: at - 1] + args[at + 1 :] if args[at] == "{root}" else args[:at] + args[at + 1 :]


def test_a_write_takes_the_workspace_after_the_command(site: Site, tmp_path: Path) -> None:
    site.write("w", "qi-2.json", draft({"t": "second"}))
    site.reconcile()
    done = run_cli(["approve", "w", "qi-2", "-w", str(site.root)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (site.agent("w") / "approved" / "qi-2.json").exists()


def test_the_workspace_after_the_command_is_the_one_used(site: Site, tmp_path: Path) -> None:
    """Given on both sides, the last one counts, as when an option is given twice."""
    other = Site(tmp_path / "other")
    done = run_cli(["-w", str(other.root), "recent", "w", "-w", str(site.root), "--json"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total"] == 2


def test_the_workspace_after_the_group_counts_over_the_one_before(
    site: Site, tmp_path: Path
) -> None:
    """`feedback -w DIR list`: the group's option counts over the global one, and one after
    the command counts over both."""
    other = Site(tmp_path / "other")
    submitted = site.cli("feedback", "submit", "--as", "b", "--json", json.dumps(RATING))
    assert submitted.returncode == 0, submitted.stderr
    listing = ["list", "--skill", "s", "--json"]
    group = run_cli(["-w", str(other.root), "feedback", "-w", str(site.root), *listing])
    assert group.returncode == 0, group.stderr
    assert json.loads(group.stdout)["count"] == 1
    last = run_cli(["feedback", "-w", str(site.root), *listing, "-w", str(other.root)])
    assert last.returncode == 0, last.stderr
    assert json.loads(last.stdout)["count"] == 0


RATING = {
    "transaction_id": "5a0c7e3b-9d14-4f2a-8b6e-2c1d0f9e8a77",
    "provider_agent": "w",
    "skill_id": "s",
    "rating": 4,
    "result_quality": "good",
    "would_reuse": True,
    "cost_value_ratio": "fair",
}


def test_the_help_of_a_command_names_the_workspace_option(site: Site) -> None:
    done = run_cli(["recent", "--help"])
    assert done.returncode == 0 and "-w, --workspace" in done.stdout


# --- prompt --json ------------------------------------------------------------------------------
def test_prompt_json_is_the_text_and_its_examples(site: Site) -> None:
    for args in (["--json", "prompt", "w"], ["prompt", "w", "--json"]):
        done = site.cli(*args)
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["agent"] == "w"
        assert answer["text"] == site.cli("prompt", "w").stdout == site.prompt("w")
        assert [(e["field"], e["original"], e["corrected"]) for e in answer["examples"]] == [
            ("t", "drafted", "first"),
            ("u", "1", "one"),
        ]
        ids = {entry["id"] for entry in site.feedback("w")}
        assert {example["id"] for example in answer["examples"]} == ids


def test_prompt_json_at_a_revision_gives_the_examples_of_then(site: Site) -> None:
    then = site.git("rev-parse", "HEAD").strip()
    site.write("w", "qi-2.json", draft({"t": "second"}, {"t": "drafted again"}), folder="approved")
    site.reconcile()
    answer = json.loads(site.cli("prompt", "w", "--at", then, "--json").stdout)
    assert answer["text"] == site.cli("prompt", "w", "--at", then).stdout
    assert [e["corrected"] for e in answer["examples"]] == ["first", "one"]
    now = json.loads(site.cli("prompt", "w", "--json").stdout)
    assert [e["corrected"] for e in now["examples"]] == ["first", "one", "second"]


def test_prompt_json_for_a_task_gives_the_examples_chosen_for_it(
    site: Site, tmp_path: Path
) -> None:
    task = tmp_path / "task.md"
    task.write_text("one\n")
    done = site.cli("--json", "prompt", "w", "--for", str(task))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["text"] == site.cli("prompt", "w", "--for", str(task)).stdout
    assert answer["examples"][-1]["corrected"] == "one"  # the most relevant last, as the text


def test_prompt_json_of_an_agent_with_nothing_learned_is_empty(site: Site) -> None:
    (site.agent("fresh")).mkdir()
    answer = json.loads(site.cli("prompt", "fresh", "--json").stdout)
    assert answer == {"agent": "fresh", "text": "", "examples": []}


def test_prompt_json_errors_are_json(site: Site) -> None:
    done = site.cli("--json", "prompt", "nobody")
    assert done.returncode == 1 and json.loads(done.stderr)["error"] == "not_found"


def test_prompt_json_at_a_time_before_a_rename_reads_the_folder_then(site: Site) -> None:
    before = site.git("rev-parse", "HEAD").strip()
    (site.data / "agents" / "w").rename(site.data / "agents" / "w2")
    site.reconcile()
    answer = json.loads(site.cli("prompt", "w2", "--at", before, "--json").stdout)
    assert answer["agent"] == "w2" and "Corrected: first" in answer["text"]
    assert [e["corrected"] for e in answer["examples"]] == ["first", "one"]

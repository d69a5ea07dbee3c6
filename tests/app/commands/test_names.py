"""A mistyped agent or provider never looks like success: the commands that read an agent answer
`not_found` naming the closest agent, and the reputation of a provider the workspace has never
seen keeps AgentBnB's cold-start score but says it was never rated and names the closest one."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.web_kit import Client, serving
from tests.workspace_kit import Site, draft

RATING = {
    "provider_agent": "heavylift-chengwen",
    "skill_id": "claude-code-run",
    "rating": 4,
    "result_quality": "good",
    "would_reuse": True,
    "cost_value_ratio": "fair",
}


@pytest.fixture
def site(tmp_path: Path) -> Site:
    """content-writer with a decision (so it has a history) and a rated heavylift-chengwen."""
    site = Site(tmp_path / "site")
    site.write("content-writer", "qi-1.json", draft({"t": "new"}, {"t": "old"}), "approved")
    site.reconcile()
    rating = {**RATING, "transaction_id": str(uuid.uuid4())}
    done = site.cli("feedback", "submit", "--as", "genesis-bot", "--json", json.dumps(rating))
    assert done.returncode == 0, done.stderr
    return site


@pytest.mark.parametrize(
    "command",
    [
        ["memory", "content-writr"],
        ["memory", "content-writr", "--json"],
        ["log", "content-writr"],
        ["log", "content-writr", "--json"],
        ["log", "content-writr", "--since", "7d"],
        ["prompt", "content-writr", "--at", "HEAD"],
    ],
)
def test_a_mistyped_agent_is_not_found_with_the_closest_name(
    site: Site, command: list[str]
) -> None:
    done = site.cli(*command)
    assert done.returncode == 1, done.stdout
    if "--json" in command:
        error = json.loads(done.stderr)
        assert error["error"] == "not_found"
        assert "did you mean content-writer?" in error["message"]
    else:
        assert done.stderr.startswith("error: not_found: no agent content-writr in _data/agents/")
        assert "did you mean content-writer?" in done.stderr
    assert done.stdout == ""


def deepest_bracket(text: str) -> int:
    depth = deepest = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
    return deepest


@pytest.mark.parametrize(
    "command",
    [
        ["memory", "content-writr"],
        ["memory", "zzz"],
        ["recent", "content-writr", "--json"],
        ["why", "content-writr"],
        ["stats", "content-writr"],
        ["export", "content-writr", "--format", "dspy"],
    ],
)
def test_a_not_found_agent_reads_as_plain_sentences(site: Site, command: list[str]) -> None:
    """What to do next is said once, without brackets inside brackets."""
    done = site.cli(*command)
    assert done.returncode == 1
    said = json.loads(done.stderr)["message"] if "--json" in command else done.stderr
    assert deepest_bracket(said) <= 1, said
    if command[1] == "content-writr":
        assert "_data/agents/: did you mean content-writer? (" in said, said


def test_the_log_of_an_agent_whose_folder_is_gone_is_still_its_history(site: Site) -> None:
    """A removed agent is no typo: its history is there to read."""
    site.git("rm", "-rq", "_data/agents/content-writer")
    site.git("commit", "-qm", "content-writer retired")
    done = site.cli("log", "content-writer", "--json")
    assert done.returncode == 0, done.stderr
    assert "approve" in [entry["event"] for entry in json.loads(done.stdout)]


def test_an_agent_with_a_folder_and_nothing_yet_is_no_error(site: Site) -> None:
    site.agent("new-agent").mkdir()
    assert site.cli("memory", "new-agent", "--json").stdout.strip() == "[]"
    assert json.loads(site.cli("log", "new-agent", "--json").stdout) == []


def test_an_unknown_provider_keeps_the_cold_start_but_is_never_rated(site: Site) -> None:
    done = site.cli("reputation", "heavylift-chengwn")
    assert done.returncode == 0, done.stderr
    assert "heavylift-chengwn: reputation 0.5: never rated" in done.stdout
    assert "no agent heavylift-chengwn in _data/agents/: did you mean heavylift-chengwen?" in (
        done.stdout
    )
    report = json.loads(site.cli("reputation", "heavylift-chengwn", "--json").stdout)
    assert report["reputation_score"] == 0.5 and report["feedback_count"] == 0
    assert report["known"] is False and report["closest"] == "heavylift-chengwen"
    far = json.loads(site.cli("reputation", "zzz", "--json").stdout)
    assert far["known"] is False and far["closest"] is None


def test_a_known_agent_not_rated_yet_says_so_and_keeps_the_spec_keys(site: Site) -> None:
    done = site.cli("reputation", "content-writer")
    assert "content-writer: reputation 0.5: no ratings yet" in done.stdout
    assert "never rated" not in done.stdout and "did you mean" not in done.stdout
    report = json.loads(site.cli("reputation", "heavylift-chengwen", "--json").stdout)
    assert "known" not in report and "closest" not in report


def test_feedback_list_of_an_unknown_provider_names_the_closest(site: Site) -> None:
    args = ["feedback", "list", "--skill", "claude-code-run", "--agent", "heavylift-chengwn"]
    done = site.cli(*args)
    assert done.returncode == 0, done.stderr
    assert "no ratings match" in done.stdout
    assert (
        "no agent heavylift-chengwn in _data/agents/: did you mean heavylift-chengwen?"
        in done.stdout
    )
    report = json.loads(site.cli(*args, "--json").stdout)
    assert report["count"] == 0 and report["reputation_score"] == 0.5
    assert report["known"] is False and report["closest"] == "heavylift-chengwen"
    known = json.loads(site.cli(*args[:-1], "heavylift-chengwen", "--json").stdout)
    assert known["count"] == 1 and "known" not in known


def test_the_http_api_says_the_same(site: Site) -> None:
    with serving(site.root) as client:
        http: Client = client
        log = http.get("/api/log?agent=content-writr")
        assert log.status == 404 and log.json()["error"] == "not_found"
        assert "did you mean content-writer?" in log.json()["message"]
        reputation: dict[str, Any] = http.get("/api/reputation/heavylift-chengwn").json()
        assert reputation["score"] == 0.5 and reputation["closest"] == "heavylift-chengwen"
        listed = http.get("/api/feedback/claude-code-run?agent=heavylift-chengwn")
        assert listed.status == 200 and listed.json()["closest"] == "heavylift-chengwen"


# --- a rating of a provider nobody rated before, whose name is close to one there is -----------
TYPO_WARNING = (
    "heavylift-chengwn is a provider nobody rated before: did you mean heavylift-chengwen?"
)


def submitted(site: Site, provider: str) -> tuple[dict[str, Any], str]:
    rating = {**RATING, "provider_agent": provider, "transaction_id": str(uuid.uuid4())}
    done = site.cli("feedback", "submit", "--as", "genesis-bot", "--json", json.dumps(rating))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_a_rating_of_a_new_provider_close_to_a_known_one_is_recorded_with_a_warning(
    site: Site,
) -> None:
    answer, stderr = submitted(site, "heavylift-chengwn")
    assert answer["status"] == "recorded" and answer["agent"] == "heavylift-chengwn"
    assert answer["warnings"] == [TYPO_WARNING]
    assert f"warning: {TYPO_WARNING}" in stderr
    assert site.agent("heavylift-chengwn").is_dir()  # a new provider is no error
    again, stderr = submitted(site, "heavylift-chengwn")  # rated before now: no more a guess
    assert again["warnings"] == [] and "did you mean" not in stderr


def test_a_rating_of_a_known_or_a_far_new_provider_has_no_warning(site: Site) -> None:
    for provider in ("heavylift-chengwen", "brand-new-provider"):
        answer, stderr = submitted(site, provider)
        assert answer["status"] == "recorded" and answer["warnings"] == []
        assert "did you mean" not in stderr


def test_a_rating_file_of_a_provider_close_to_a_known_one_is_recorded_with_a_log_line(
    site: Site,
) -> None:
    rating = {**RATING, "provider_agent": "heavylift-chengwn", "transaction_id": str(uuid.uuid4())}
    inbox = site.data / "inbox" / "ratings"
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / "one.json").write_text(json.dumps({**rating, "requester_agent": "genesis-bot"}))
    done = site.cli("run", "--once")
    assert done.returncode == 0, done.stderr
    assert f"warning: {TYPO_WARNING}" in done.stderr
    assert not (inbox / "one.json").exists() and site.agent("heavylift-chengwn").is_dir()


def test_the_http_api_answers_the_warning_beside_its_keys(site: Site) -> None:
    rating = {
        **RATING,
        "provider_agent": "heavylift-chengwn",
        "transaction_id": str(uuid.uuid4()),
        "requester_agent": "genesis-bot",
    }
    with serving(site.root) as client:
        answer = client.post("/api/feedback", rating)
        assert answer.status == 201, answer.text
        body: dict[str, Any] = answer.json()
        assert body["feedback_id"] == rating["transaction_id"] and "received_at" in body
        assert body["warnings"] == [TYPO_WARNING]


# --- a skill that no provider has, close to one there is ----------------------------------------
def test_the_reputation_of_a_mistyped_skill_names_the_closest(site: Site) -> None:
    args = ["reputation", "heavylift-chengwen", "--skill", "claude-code-rn"]
    done = site.cli(*args)
    assert done.returncode == 0, done.stderr
    assert "heavylift-chengwen: reputation 0.5: no ratings yet" in done.stdout
    assert (
        "heavylift-chengwen has no skill claude-code-rn: did you mean claude-code-run?"
        in done.stdout
    )
    report = json.loads(site.cli(*args, "--json").stdout)
    assert report["feedback_count"] == 0 and report["closest_skill"] == "claude-code-run"
    far = json.loads(site.cli(*args[:-1], "zzz", "--json").stdout)
    assert far["closest_skill"] is None
    assert "its skills are: claude-code-run" in site.cli(*args[:-1], "zzz").stdout
    known = json.loads(site.cli(*args[:-1], "claude-code-run", "--json").stdout)
    assert "closest_skill" not in known  # a skill it has: SPEC's keys only


def test_feedback_list_of_a_mistyped_skill_names_the_closest_of_all_skills(site: Site) -> None:
    args = ["feedback", "list", "--skill", "claude-code-rn"]
    done = site.cli(*args)
    assert done.returncode == 0, done.stderr
    assert "no ratings match" in done.stdout
    assert "no agent has a skill claude-code-rn: did you mean claude-code-run?" in done.stdout
    report = json.loads(site.cli(*args, "--json").stdout)
    assert report["count"] == 0 and report["closest_skill"] == "claude-code-run"
    of_one = json.loads(site.cli(*args, "--agent", "heavylift-chengwen", "--json").stdout)
    assert of_one["closest_skill"] == "claude-code-run"
    old = json.loads(
        site.cli(*args[:-1], "claude-code-run", "--since", "2999-01-01T00:00:00Z", "--json").stdout
    )
    assert old["count"] == 0 and "closest_skill" not in old  # a known skill, none that recent

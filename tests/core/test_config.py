"""Configuration: the documented file matches the code; every bad file is explained."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from feedbackd.app.workspace.configfile import config_path
from feedbackd.app.workspace.runtime import load_settings
from feedbackd.core.config import ReviewSettings, Settings, parse_settings
from feedbackd.core.errors import ConfigError
from tests.repo_kit import ROOT

DOCUMENTED = ROOT / "config" / "feedbackd.yaml"
SOURCE = "ws/feedbackd.yaml"

# A key line, live or commented out as an example: `  git:`, `  # remote: origin`.
KEY_LINE = re.compile(r"^(?P<indent> *)(?P<comment># ?)?(?P<key>[a-z_]+):(?: |$)")


def settings_paths(model: type[BaseModel] = Settings, prefix: str = "") -> list[str]:
    """Every dotted key of the settings, sections and the names of fixed maps included."""
    paths: list[str] = []
    for name, field in model.model_fields.items():
        dotted = f"{prefix}{name}"
        paths.append(dotted)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            paths += settings_paths(annotation, f"{dotted}.")
        default = field.get_default(call_default_factory=True)
        if isinstance(default, dict):
            paths += [f"{dotted}.{key}" for key in default]
    return paths


def documented_keys(text: str) -> dict[str, int]:
    """Dotted key → line index, read from indentation (commented-out examples count too)."""
    found: dict[str, int] = {}
    parents: list[tuple[int, str]] = []
    for index, line in enumerate(text.splitlines()):
        match = KEY_LINE.match(line)
        if not match:
            continue
        indent = len(match["indent"])
        while parents and parents[-1][0] >= indent:
            parents.pop()
        dotted = ".".join([*(key for _, key in parents), match["key"]])
        found[dotted] = index
        if not match["comment"]:
            parents.append((indent, match["key"]))
    return found


def explain(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_settings(text, SOURCE)
    assert caught.value.code == "config_error"
    return str(caught.value)


# The documented file --------------------------------------------------------------------------


def test_documented_file_loads_as_the_defaults() -> None:
    assert load_settings(DOCUMENTED) == Settings()


def test_the_documented_file_cites_the_readme_a_user_has() -> None:
    """The SPEC is the developers' contract, not in a user's hands; the README is."""
    text = DOCUMENTED.read_text(encoding="utf-8")
    assert "SPEC" not in text
    readme = (DOCUMENTED.parents[1] / "README.md").read_text(encoding="utf-8")
    # A `#` line inside a code block (the snippet's `## Learn from past corrections`) is no
    # heading a reader can find in the README's outline.
    prose = re.sub(r"(?ms)^```.*?^```", "", readme)
    headings = {line.lstrip("#").strip() for line in prose.splitlines() if line.startswith("#")}
    cited = re.findall(r'README "([^"]+)"', text)
    assert len(cited) >= 6 and set(cited) <= headings, set(cited) - headings
    assert text.count("README") == len(cited), "a README citation the check cannot read"


def test_every_setting_is_documented_with_a_comment() -> None:
    text = DOCUMENTED.read_text(encoding="utf-8")
    lines = text.splitlines()
    documented = documented_keys(text)
    missing = [path for path in settings_paths() if path not in documented]
    assert not missing, f"config/feedbackd.yaml does not mention: {missing}"
    for path in settings_paths():
        if path.count(".") == 2:
            continue  # the entries of a map share the comment above the map
        above = lines[documented[path] - 1].strip()
        assert above.startswith("#"), f"{path} has no comment above it"


def test_documented_file_names_no_unknown_key() -> None:
    known = set(settings_paths())
    documented = documented_keys(DOCUMENTED.read_text(encoding="utf-8"))
    assert set(documented) <= known


def test_commented_examples_are_valid_values() -> None:
    text = DOCUMENTED.read_text(encoding="utf-8")
    live = re.sub(r"(?m)^(\s*)# ((?:remote|branch|sync_command|command): .*)$", r"\1\2", text)
    settings = parse_settings(live, str(DOCUMENTED))
    assert settings.git.remote == "origin"
    assert settings.pricing.sync_command == ["agentbnb", "openclaw", "sync"]
    assert settings.optimizer.command is not None


# Good files ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n", "---\n"])
def test_empty_file_means_defaults(text: str) -> None:
    assert parse_settings(text, SOURCE) == Settings()


def test_a_section_with_every_key_commented_out_means_defaults() -> None:
    text = "git:\n  # remote: origin\nprompt:\n"
    assert parse_settings(text, SOURCE) == Settings()


def test_values_are_read() -> None:
    text = (
        "agent_id: genesis-bot\n"
        "prompt:\n  show_field: true\n  max_examples: 3\n"
        "git:\n  remote: origin\n  pull_interval_s: 5\n"
        "pricing:\n  step_pct: 10\n  sync_command: [agentbnb, openclaw, sync]\n"
    )
    settings = parse_settings(text, SOURCE)
    assert settings.agent_id == "genesis-bot"
    assert (settings.prompt.show_field, settings.prompt.max_examples) == (True, 3)
    assert (settings.git.remote, settings.git.pull_interval_s) == ("origin", 5)
    assert settings.pricing.step_pct == 10
    assert settings.pricing.sync_command == ["agentbnb", "openclaw", "sync"]
    assert settings.feedback == Settings().feedback


def test_naming_one_weight_keeps_the_other_defaults() -> None:
    settings = parse_settings("reputation:\n  weights:\n    rating: 0.5\n", SOURCE)
    assert settings.reputation.weights == {
        "rating": 0.5,
        "quality": 0.3,
        "would_reuse": 0.2,
        "cost_value": 0.1,
    }


# Bad files: what, where, and how to fix it ---------------------------------------------------


def test_typo_at_top_level_suggests_the_key() -> None:
    message = explain("agent_id: genesis-bot\nfeedbak:\n  max_entries: 3\n")
    assert message.startswith(f"{SOURCE}, line 2: unknown key `feedbak`")
    assert "did you mean `feedback`?" in message


def test_unknown_nested_key_names_its_line_and_the_closest_key() -> None:
    message = explain("prompt:\n  show_field: true\n  max_exampels: 3\n")
    assert f"{SOURCE}, line 3: unknown key `prompt.max_exampels`" in message
    assert "did you mean `prompt.max_examples`?" in message


def test_unknown_name_in_a_fixed_map_suggests_the_closest() -> None:
    message = explain("reputation:\n  weights:\n    ratng: 0.4\n")
    assert f"{SOURCE}, line 3: unknown key `reputation.weights.ratng`" in message
    assert "did you mean `reputation.weights.rating`?" in message


def test_unknown_key_far_from_any_lists_the_known_ones() -> None:
    message = explain("daemon:\n  zzz: 1\n")
    assert "unknown key `daemon.zzz`" in message
    assert "settle_ms, debounce_ms" in message


@pytest.mark.parametrize(
    ("text", "key", "line", "why"),
    [
        ("feedback:\n  max_entries: lots\n", "feedback.max_entries", 2, "valid integer"),
        ("prompt:\n  show_field: maybe\n", "prompt.show_field", 2, "valid boolean"),
        ("agent_id: 5\n", "agent_id", 1, "valid string"),
        ("optimizer:\n  command: run.sh\n", "optimizer.command", 2, "valid list"),
        ("\n\npricing:\n  min_samples: 3\n  step_pct: 20\n", "pricing.step_pct", 5, "10"),
        ("pricing:\n  step_pct: 2\n", "pricing.step_pct", 2, "5"),
        ("reputation:\n  cold_start: 1.5\n", "reputation.cold_start", 2, "1"),
        ("ratings:\n  window: 7 days\n", "ratings.window", 2, "duration like 30s"),
        ("pricing:\n  cooldown: weekly\n", "pricing.cooldown", 2, "duration like 30s"),
        ("git:\n  pull_interval_s: .inf\n", "git.pull_interval_s", 2, "finite"),
        ("pricing:\n  sync_command: []\n", "pricing.sync_command", 2, "at least 1 item"),
        ("git:\n  committer: feedbackd\n", "git.committer", 2, "pattern"),
        ('git:\n  committer: "a\\nb <c@d>"\n', "git.committer", 2, "pattern"),
        ("data_dir: ..\n", "data_dir", 1, "inside the workspace"),
        ("data_dir: a/b\n", "data_dir", 1, "pattern"),
        ("agent_id: ../elsewhere\n", "agent_id", 1, "pattern"),
    ],
)
def test_bad_value_names_file_line_and_key(text: str, key: str, line: int, why: str) -> None:
    message = explain(text)
    assert message.startswith(f"{SOURCE}, line {line}: bad value for `{key}`: ")
    assert why in message
    assert "see config/feedbackd.yaml" in message


def test_a_list_where_a_section_belongs() -> None:
    message = explain("git:\n  enabled: true\nprompt:\n  - show_field\n")
    assert message.startswith(f"{SOURCE}, line 3: bad value for `prompt`")


@pytest.mark.parametrize("text", ["- git\n- prompt\n", "just words\n", "42\n"])
def test_whole_file_must_be_a_mapping(text: str) -> None:
    message = explain(text)
    assert message.startswith(f"{SOURCE}: the configuration must be a mapping of keys")
    assert "key: value" in message


def test_malformed_yaml_names_the_line() -> None:
    message = explain("git:\n  enabled: true\nprompt:\n  max_examples: [1, 2\n")
    assert message.startswith(f"{SOURCE} (line 5")
    assert "fix the YAML" in message


def test_tab_indentation_names_the_line() -> None:
    assert explain("git:\n\tenabled: true\n").startswith(f"{SOURCE} (line 2")


def test_duplicate_key_is_refused() -> None:
    message = explain("feedback:\n  max_entries: 1\nfeedback:\n  max_entries: 2\n")
    assert message.startswith(f"{SOURCE} (line 3")
    assert "duplicate key" in message


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("defaults: &d\n  max_entries: 3\nfeedback: *d\n", "anchor &d"),
        ("agent_id: !!str genesis\n", "tag"),
        ("feedback: !!map\n  max_entries: 3\n", "tag"),
    ],
)
def test_anchors_aliases_and_tags_are_refused(text: str, what: str) -> None:
    message = explain(text)
    assert message.startswith(f"{SOURCE} (line 1")
    assert what in message


def test_second_document_is_refused() -> None:
    assert "more than one YAML document" in explain("git:\n  push: false\n---\ngit: {}\n")


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "feedbackd.yaml"
    path.write_bytes(b"agent_id: \xff\xfe\n")
    with pytest.raises(ConfigError, match=r"feedbackd\.yaml: cannot read"):
        load_settings(path)


def test_load_names_the_real_path(tmp_path: Path) -> None:
    path = tmp_path / "feedbackd.yaml"
    path.write_text("prompt:\n  max_rejections: -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}, line 2: .*max_rejections"):
        load_settings(path)


def test_no_path_means_defaults() -> None:
    assert load_settings(None) == Settings()


# Where the configuration comes from -----------------------------------------------------------


@pytest.fixture
def three_files(tmp_path: Path) -> dict[str, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    files = {
        "explicit": tmp_path / "explicit.yaml",
        "env": tmp_path / "env.yaml",
        "workspace": workspace / "feedbackd.yaml",
    }
    for path in files.values():
        path.write_text("", encoding="utf-8")
    return files


def test_explicit_path_wins(three_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEEDBACKD_CONFIG", str(three_files["env"]))
    workspace = three_files["workspace"].parent
    assert config_path(str(three_files["explicit"]), workspace) == three_files["explicit"]


def test_environment_comes_next(
    three_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEEDBACKD_CONFIG", str(three_files["env"]))
    assert config_path(None, three_files["workspace"].parent) == three_files["env"]


def test_workspace_file_comes_last(three_files: dict[str, Path]) -> None:
    workspace = three_files["workspace"].parent
    assert config_path(None, workspace) == three_files["workspace"]


def test_nothing_found_means_defaults(tmp_path: Path) -> None:
    assert config_path(None, tmp_path) is None
    assert config_path(None, None) is None


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "feedbackd.yaml").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError, match="does not exist") as caught:
        config_path(str(tmp_path / "nope.yaml"), tmp_path)
    assert "--config" in caught.value.hint


def test_missing_environment_file_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FEEDBACKD_CONFIG", str(tmp_path / "gone.yaml"))
    with pytest.raises(ConfigError, match=r"gone\.yaml does not exist") as caught:
        config_path(None, tmp_path)
    assert "$FEEDBACKD_CONFIG" in caught.value.hint


def test_a_folder_is_not_a_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        config_path(str(tmp_path), None)


def test_found_file_loads(three_files: dict[str, Path]) -> None:
    three_files["workspace"].write_text("prompt:\n  show_field: true\n", encoding="utf-8")
    chosen = config_path(None, three_files["workspace"].parent)
    assert load_settings(chosen).prompt.show_field is True


def test_settings_are_frozen() -> None:
    settings: Any = Settings()
    with pytest.raises(ValueError, match="frozen"):
        settings.prompt.max_examples = 9


# review: how many curators review a draft (SPEC section 15) -----------------------------------


def test_one_curator_reviews_by_default() -> None:
    settings = parse_settings("", SOURCE)
    assert settings.review.required == 1
    assert settings.review.agents == {}
    assert settings.review.required_for("content-writer") == 1


def test_an_agent_may_need_several_curators() -> None:
    settings = parse_settings("review:\n  required: 2\n  agents:\n    content-writer: 3\n", SOURCE)
    assert settings.review.required_for("content-writer") == 3
    assert settings.review.required_for("seo-bot") == 2


def test_an_agent_may_need_more_curators_than_the_rest() -> None:
    settings = {"required": 2, "agents": {"content-writer": 3, "seo-bot": 1}}
    review = ReviewSettings.model_construct(**settings)  # type: ignore[arg-type]
    assert review.required_for("content-writer") == 3
    assert review.required_for("seo-bot") == 1
    assert review.required_for("anyone-else") == 2


@pytest.mark.parametrize(
    ("text", "key", "line", "why"),
    [
        ("review:\n  required: 0\n", "review.required", 2, "greater than or equal to 1"),
        ("review:\n  required: -2\n", "review.required", 2, "greater than or equal to 1"),
        ("review:\n  required: two\n", "review.required", 2, "valid integer"),
        ('review:\n  required: "2"\n', "review.required", 2, "valid integer"),
        ("review:\n  required: 1.5\n", "review.required", 2, "valid integer"),
        ("review:\n  required: true\n", "review.required", 2, "valid integer"),
        ("review:\n  agents:\n    writer: 0\n", "review.agents.writer", 3, "1"),
        ("review:\n  agents:\n    writer: many\n", "review.agents.writer", 3, "valid integer"),
        ("review:\n  agents:\n    ../x: 2\n", "review.agents.../x", 3, "an agent id"),
        ("review:\n  agents: [writer]\n", "review.agents", 2, "valid dictionary"),
    ],
)
def test_bad_review_settings_name_the_line(text: str, key: str, line: int, why: str) -> None:
    message = explain(text)
    assert message.startswith(f"{SOURCE}, line {line}: bad value for `{key}`: "), message
    assert why in message


def test_a_typo_in_review_suggests_the_key() -> None:
    message = explain("review:\n  requried: 2\n")
    assert f"{SOURCE}, line 2: unknown key `review.requried`" in message
    assert "did you mean `review.required`?" in message

"""feedbackd.yaml as typed settings; errors name the file, line and key, and suggest a fix.

Lookup: --config FILE, else $FEEDBACKD_CONFIG, else <workspace>/feedbackd.yaml, else defaults.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from feedbackd import yamlio
from feedbackd.errors import ConfigError, UsageError
from feedbackd.timeutil import parse_duration

_STRICT = ConfigDict(extra="forbid", frozen=True)


def _duration(value: str) -> str:
    try:
        parse_duration(value)
    except UsageError:
        raise ValueError("a duration like 30s, 15m, 12h, 7d or 4w") from None
    return value


class FeedbackSettings(BaseModel):
    model_config = _STRICT
    max_entries: int = Field(200, ge=1, le=100_000)


class PromptSettings(BaseModel):
    model_config = _STRICT
    max_examples: int = Field(5, ge=0, le=100)
    show_field: bool = False
    max_example_chars: int = Field(600, ge=20)
    include_rejections: bool = False
    max_rejections: int = Field(5, ge=0, le=100)


class GitSettings(BaseModel):
    model_config = _STRICT
    enabled: bool = True
    committer: str = Field("feedbackd <feedbackd@localhost>", pattern=r"^[^<>]+ <[^<>]*>$")
    remote: str | None = None
    branch: str | None = None
    push: bool = True
    pull_interval_s: float = Field(60, ge=1)
    stale_lock_s: float = Field(30, ge=0)


class DaemonSettings(BaseModel):
    model_config = _STRICT
    settle_ms: int = Field(2000, ge=0)
    debounce_ms: int = Field(50, ge=0)


class RatingsSettings(BaseModel):
    model_config = _STRICT
    window: str = "7d"

    _check_window = field_validator("window")(_duration)


class ReputationSettings(BaseModel):
    model_config = _STRICT
    weights: dict[Literal["rating", "quality", "would_reuse", "cost_value"], float] = Field(
        default_factory=lambda: {
            "rating": 0.4,
            "quality": 0.3,
            "would_reuse": 0.2,
            "cost_value": 0.1,
        }
    )
    quality_map: dict[Literal["excellent", "good", "acceptable", "poor", "failed"], float] = (
        Field(
            default_factory=lambda: {
                "excellent": 1.0,
                "good": 0.8,
                "acceptable": 0.6,
                "poor": 0.3,
                "failed": 0.0,
            }
        )
    )
    cost_value_map: dict[Literal["great", "fair", "overpriced"], float] = Field(
        default_factory=lambda: {"great": 1.0, "fair": 0.6, "overpriced": 0.2}
    )
    decay_days: float = Field(30, gt=0)
    cold_start: float = Field(0.5, ge=0, le=1)


class PricingSettings(BaseModel):
    model_config = _STRICT
    min_samples: int = Field(3, ge=1)
    overpriced_min_count: int = Field(3, ge=1)
    step_pct: float = Field(5, ge=5, le=10)
    min_price: float = Field(1, ge=0)
    floor_ratio: float = Field(0.5, ge=0, le=1)
    cooldown: str = "7d"
    allow_increase: bool = False
    cap_ratio: float = Field(3, ge=1)
    sync_command: list[str] | None = None
    sync_timeout_s: float = Field(60, gt=0)

    _check_cooldown = field_validator("cooldown")(_duration)


class OptimizerSettings(BaseModel):
    model_config = _STRICT
    low_rating_threshold: float = Field(2.0, ge=1, le=5)
    command: list[str] | None = None
    timeout_s: float = Field(60, gt=0)
    max_lessons: int = Field(10, ge=1)


class Settings(BaseModel):
    """The whole configuration; every key is documented in config/feedbackd.yaml."""

    model_config = _STRICT
    data_dir: str = Field("_data", pattern=r"^[A-Za-z0-9._-]+$")
    agent_id: str | None = None
    feedback: FeedbackSettings = Field(default_factory=FeedbackSettings)  # type: ignore[arg-type]
    prompt: PromptSettings = Field(default_factory=PromptSettings)  # type: ignore[arg-type]
    git: GitSettings = Field(default_factory=GitSettings)  # type: ignore[arg-type]
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)  # type: ignore[arg-type]
    ratings: RatingsSettings = Field(default_factory=RatingsSettings)  # type: ignore[arg-type]
    reputation: ReputationSettings = Field(default_factory=ReputationSettings)  # type: ignore[arg-type]
    pricing: PricingSettings = Field(default_factory=PricingSettings)  # type: ignore[arg-type]
    optimizer: OptimizerSettings = Field(default_factory=OptimizerSettings)  # type: ignore[arg-type]


def config_path(explicit: str | None, workspace_root: Path | None) -> Path | None:
    """The file that configures this run, or None for built-in defaults."""
    chosen = explicit or os.environ.get("FEEDBACKD_CONFIG")
    if chosen:
        path = Path(chosen).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist", hint="check --config")
        return path
    if workspace_root is not None and (workspace_root / "feedbackd.yaml").is_file():
        return workspace_root / "feedbackd.yaml"
    return None


def load_settings(path: Path | None) -> Settings:
    if path is None:
        return Settings()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse_settings(text, str(path))


def parse_settings(text: str, source: str) -> Settings:
    try:
        tree = yamlio.load(text)
    except yamlio.YamlError as exc:
        raise ConfigError(f"{source}{exc.where()}: {exc.message}", hint="fix the YAML") from None
    if tree is None:
        return Settings()
    if not isinstance(tree, dict):
        raise ConfigError(f"{source}: the configuration must be a mapping of keys")
    try:
        return Settings.model_validate(yamlio.to_plain(tree))
    except ValidationError as exc:
        raise _explain(exc, tree, source) from None


def _explain(exc: ValidationError, tree: Any, source: str) -> ConfigError:
    error = exc.errors()[0]
    keys = [str(part) for part in error["loc"]]
    dotted = ".".join(keys)
    line = _line_of(tree, keys)
    where = f"{source}, line {line}" if line else source
    if error["type"] == "extra_forbidden":
        suggestion = _closest_key(keys)
        hint = f"did you mean `{suggestion}`?" if suggestion else "remove it"
        return ConfigError(f"{where}: unknown key `{dotted}`", hint=hint)
    return ConfigError(
        f"{where}: bad value for `{dotted}`: {error['msg']}",
        hint="see config/feedbackd.yaml for the allowed values",
    )


def _line_of(tree: Any, keys: list[str]) -> int | None:
    node, line = tree, None
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            break
        position = yamlio.key_position(node, key)
        line = position[0] if position else line
        node = node[key]
    return line


def _closest_key(keys: list[str]) -> str | None:
    model: type[BaseModel] = Settings
    for key in keys[:-1]:
        field = model.model_fields.get(key)
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    matches = difflib.get_close_matches(keys[-1], list(model.model_fields), n=1, cutoff=0.5)
    return ".".join([*keys[:-1], matches[0]]) if matches else None

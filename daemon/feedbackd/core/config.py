"""feedbackd.yaml as typed settings; errors name the file, line and key, and suggest a fix.

Lookup: --config FILE, else $FEEDBACKD_CONFIG, else <workspace>/feedbackd.yaml, else defaults.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import string
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from feedbackd.core.errors import ConfigError, UsageError
from feedbackd.core.events.signing import EventName, parse_secret, url_problem
from feedbackd.core.feedbackcap import DEFAULT_MAX_ENTRIES, MAX_ENTRIES_LIMIT
from feedbackd.core.formats import yamlio
from feedbackd.core.ids import ID_PATTERN
from feedbackd.core.people import FEEDBACKD_PERSON
from feedbackd.core.ratingwords import CostValue, Quality
from feedbackd.core.timeutil import parse_duration

# Infinite or NaN numbers would turn timeouts and intervals into endless waits.
_STRICT = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
# A command is an argv list; an empty one would have nothing to run.
Command = Annotated[list[str], Field(min_length=1)]


def _duration(value: str) -> str:
    try:
        parse_duration(value)
    except UsageError:
        raise ValueError("a duration like 30s, 15m, 12h, 7d or 4w") from None
    return value


class FeedbackSettings(BaseModel):
    model_config = _STRICT
    max_entries: int = Field(DEFAULT_MAX_ENTRIES, ge=1, le=MAX_ENTRIES_LIMIT)


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
    committer: str = Field(str(FEEDBACKD_PERSON), pattern=r"^[^<>\n]+ <[^<>\n]*>$")
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


ReputationTerm = Literal["rating", "quality", "would_reuse", "cost_value"]

_WEIGHTS: dict[ReputationTerm, float] = {
    "rating": 0.4,
    "quality": 0.3,
    "would_reuse": 0.2,
    "cost_value": 0.1,
}
_QUALITY: dict[Quality, float] = {
    "excellent": 1.0,
    "good": 0.8,
    "acceptable": 0.6,
    "poor": 0.3,
    "failed": 0.0,
}
_COST_VALUE: dict[CostValue, float] = {"great": 1.0, "fair": 0.6, "overpriced": 0.2}


class ReputationSettings(BaseModel):
    model_config = _STRICT
    weights: dict[ReputationTerm, float] = Field(default_factory=_WEIGHTS.copy)
    quality_map: dict[Quality, float] = Field(default_factory=_QUALITY.copy)
    cost_value_map: dict[CostValue, float] = Field(default_factory=_COST_VALUE.copy)
    decay_days: float = Field(30, gt=0)
    cold_start: float = Field(0.5, ge=0, le=1)

    @field_validator("weights", "quality_map", "cost_value_map", mode="before")
    @classmethod
    def _keep_other_defaults(cls, value: Any, info: ValidationInfo) -> Any:
        # Setting one weight must not drop the others: the score needs every term.
        if not isinstance(value, dict) or info.field_name is None:
            return value
        default = cls.model_fields[info.field_name].get_default(call_default_factory=True)
        return {**default, **value}


class PricingSettings(BaseModel):
    model_config = _STRICT
    min_samples: int = Field(3, ge=1)
    overpriced_min_count: int = Field(3, ge=1)
    min_requesters: int = Field(2, ge=1)  # distinct buyers: one alone never moves a price
    step_pct: float = Field(5, ge=5, le=10)
    min_price: float = Field(1, ge=0)
    floor_ratio: float = Field(0.5, ge=0, le=1)
    cooldown: str = "7d"
    allow_increase: bool = False
    cap_ratio: float = Field(3, ge=1)
    sync_command: Command | None = None
    sync_timeout_s: float = Field(60, gt=0)

    _check_cooldown = field_validator("cooldown")(_duration)


class OptimizerSettings(BaseModel):
    model_config = _STRICT
    low_rating_threshold: float = Field(2.0, ge=1, le=5)
    command: Command | None = None
    timeout_s: float = Field(60, gt=0)
    max_lessons: int = Field(10, ge=1)


class HttpSettings(BaseModel):
    model_config = _STRICT
    listen: str = Field("127.0.0.1:8787", min_length=1)
    token_file: str | None = None
    # The curators who may use the server, each with a token of their own (SPEC section 15):
    # lines `NAME <EMAIL> TOKEN_SHA256`; read by `serve` as it starts (web/server.py).
    users_file: str | None = None
    # The names and addresses users reach the server by, besides the listen address and loopback
    # (a Host header naming anything else is refused as DNS rebinding).
    public_names: list[str] = Field(default_factory=list)
    max_connections: int = Field(512, ge=16, le=65536)
    write_wait_s: float = Field(30.0, gt=0, le=3600)
    # The reverse proxies whose X-Forwarded-For and X-Forwarded-Proto are believed (addresses or
    # networks). None by default: a client's address is its connection's, which a client cannot
    # forge, so the limit on wrong tokens cannot be dodged by naming another address.
    trusted_proxies: list[str] = Field(default_factory=list)
    # Exports streamed at once, at most; one more is answered 503 busy (each reads the history).
    max_exports: int = Field(4, ge=1, le=256)

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses_or_networks(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"{entry!r} is not an IP address or network, like 127.0.0.1 or 10.0.0.0/8"
                ) from None
        return value


class McpSettings(BaseModel):
    """`feedbackd mcp` and `/mcp` on `feedbackd serve` (SPEC section 16)."""

    model_config = _STRICT
    # Whether the write tools (submit_rating, record_feedback) are offered. Unset: over standard
    # input and output (a host that started the server is its user) yes, over HTTP no.
    allow_writes: bool | None = None


class WebhouseSettings(BaseModel):
    """A webhouse CMS site: its curation queue is one JSON file its admin app rewrites."""

    model_config = _STRICT
    queue_file: str | None = None  # relative to the workspace, inside the data folder

    @field_validator("queue_file")
    @classmethod
    def _plain_relative_path(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = value.split("/")
        if value.startswith("/") or "\\" in value or any(p in {"", ".", ".."} for p in parts):
            raise ValueError("a path inside the workspace, like _data/curation-queue.json")
        return value


# What `feedbackd export` asks for, when an item has no prompt, brief or task of its own. Its
# fields: {id}, {agent}, {collection}, {slug}; core/curation/exportrows.py fills them.
EXPORT_TEMPLATE_FIELDS = ("id", "agent", "collection", "slug")


class ExportSettings(BaseModel):
    model_config = _STRICT
    input_template: str = Field('Write the {collection} item "{slug}".', min_length=1)
    # The system message of every exported conversation: a text, or `soul` for the persona in
    # the agent's SOUL.md as the exported commit held it. Unset: none.
    system: str | None = Field(None, min_length=1)

    @field_validator("input_template")
    @classmethod
    def _known_fields(cls, value: str) -> str:
        try:
            parts = list(string.Formatter().parse(value))
        except ValueError as error:
            raise ValueError(f"{error}; write a literal brace as {{{{ or }}}}") from None
        fields = ", ".join(f"{{{name}}}" for name in EXPORT_TEMPLATE_FIELDS)
        for _, name, spec, conversion in parts:
            if name is not None and (name not in EXPORT_TEMPLATE_FIELDS or spec or conversion):
                raise ValueError(f"{{{name}}} is not a field of the item: use {fields}")
        return value


class EvalSettings(BaseModel):
    """`feedbackd eval` and `bisect` (SPEC section 14): the agent command that plays the agent."""

    model_config = _STRICT
    # A command line, split as a shell would (no shell runs it), or `builtin:apply-lessons`.
    command: str | None = Field(None, min_length=1)
    timeout_s: float = Field(60, gt=0)
    jobs: int = Field(4, ge=1, le=64)


# How many curators review a draft: at least one. Strict, so that `"2"`, `2.5` or `true` are
# refused rather than read as a number the user did not write.
Reviewers = Annotated[StrictInt, Field(ge=1, le=100)]
AgentKey = Annotated[str, Field(pattern=ID_PATTERN.pattern)]


class ReviewSettings(BaseModel):
    """How many curators review a draft before it is decided (SPEC section 15)."""

    model_config = _STRICT
    required: Reviewers = 1
    agents: dict[AgentKey, Reviewers] = Field(default_factory=dict)

    def required_for(self, agent: str) -> int:
        return self.agents.get(agent, self.required)


# The validation context's key for a function that reads a secret file (a path as written in
# the configuration → its text; OSError when it cannot): the core reads no disk itself.
READ_SECRET = "read_secret"


class WebhookSettings(BaseModel):
    """One receiver of events (SPEC section 17)."""

    model_config = _STRICT
    url: str = Field(min_length=1)
    secret_file: str = Field(min_length=1)
    events: list[EventName] | None = None  # None: every event
    timeout_s: float = Field(10, gt=0, le=300)

    @field_validator("url")
    @classmethod
    def _safe_url(cls, value: str) -> str:
        problem = url_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("secret_file")
    @classmethod
    def _readable_secret(cls, value: str, info: ValidationInfo) -> str:
        read = (info.context or {}).get(READ_SECRET)
        if read is None:  # parsed without the disk (the merge driver): checked when loaded
            return value
        try:
            parse_secret(read(value))
        except OSError as error:
            raise ValueError(f"cannot read the secret file: {error.strerror or error}") from None
        except ValueError as error:
            raise ValueError(f"the secret file {value}: {error}") from None
        return value


class EventsSettings(BaseModel):
    model_config = _STRICT
    webhooks: list[WebhookSettings] = Field(default_factory=list)
    retry_hours: float = Field(24, gt=0, le=24 * 365)
    # Which commits this clone sends: those made here (`own`), or every commit it finds (`all`,
    # pulled ones too): with several clones, each commit is sent once, by the clone that made it.
    deliver: Literal["own", "all"] = "own"

    @field_validator("webhooks")
    @classmethod
    def _one_hook_per_url(cls, value: list[WebhookSettings]) -> list[WebhookSettings]:
        urls = [hook.url for hook in value]
        if len(set(urls)) != len(urls):
            raise ValueError("each url once: a hook is known by its url")
        return value


class Settings(BaseModel):
    """The whole configuration; every key is documented in config/feedbackd.yaml."""

    model_config = _STRICT
    data_dir: str = Field("_data", pattern=r"^[A-Za-z0-9._-]{1,128}$")
    # The requester's id becomes a folder name: the id rule keeps it inside `_data/agents/`.
    agent_id: str | None = Field(None, pattern=ID_PATTERN.pattern)
    feedback: FeedbackSettings = Field(default_factory=FeedbackSettings)
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    git: GitSettings = Field(default_factory=GitSettings)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    ratings: RatingsSettings = Field(default_factory=RatingsSettings)
    reputation: ReputationSettings = Field(default_factory=ReputationSettings)
    pricing: PricingSettings = Field(default_factory=PricingSettings)
    optimizer: OptimizerSettings = Field(default_factory=OptimizerSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    webhouse: WebhouseSettings = Field(default_factory=WebhouseSettings)
    export: ExportSettings = Field(default_factory=ExportSettings)
    eval: EvalSettings = Field(default_factory=EvalSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    events: EventsSettings = Field(default_factory=EventsSettings)

    @field_validator("webhouse")
    @classmethod
    def _queue_file_in_data_dir(
        cls, value: WebhouseSettings, info: ValidationInfo
    ) -> WebhouseSettings:
        # The watcher only sees the data folder: a queue file elsewhere would never be noticed.
        data_dir = info.data.get("data_dir", "_data")
        queue_file = value.queue_file
        if queue_file is not None and queue_file.split("/")[0] != data_dir:
            raise ValueError(
                f"queue_file must lie in the data folder {data_dir}/,"
                f" like {data_dir}/curation-queue.json"
            )
        return value

    @field_validator("data_dir")
    @classmethod
    def _data_dir_inside_workspace(cls, value: str) -> str:
        # git's own folder and feedbackd's local state are not places for shared data.
        if value in {".", ".."} or value.lower() in {".git", ".feedbackd"}:
            raise ValueError("a folder name inside the workspace, like _data")
        return value

    @field_validator(
        "feedback",
        "prompt",
        "git",
        "daemon",
        "ratings",
        "reputation",
        "pricing",
        "optimizer",
        "http",
        "mcp",
        "webhouse",
        "export",
        "eval",
        "review",
        "events",
        mode="before",
    )
    @classmethod
    def _empty_section_means_defaults(cls, value: Any) -> Any:
        # `git:` with every key below it commented out reads as null; it means "all defaults".
        return {} if value is None else value


def parse_settings(
    text: str, source: str, read_secret: Callable[[str], str] | None = None
) -> Settings:
    try:
        tree = _parsed(text)
    except yamlio.YamlError as exc:
        raise ConfigError(f"{source}{exc.where()}: {exc.message}", hint="fix the YAML") from None
    if tree is None:
        return Settings()
    if not isinstance(tree, dict):
        raise ConfigError(
            f"{source}: the configuration must be a mapping of keys",
            hint="write `key: value` lines such as `git:`; see config/feedbackd.yaml",
        )
    try:
        context = {READ_SECRET: read_secret} if read_secret is not None else None
        return Settings.model_validate(yamlio.to_plain(tree), context=context)
    except ValidationError as exc:
        raise _explain(exc, tree, source) from None


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> Any:
    """The YAML of a configuration, parsed once for each text and then only read. The daemon,
    `serve` and `mcp` parse again only when the file changes; a caller that opens the workspace
    for each command in one process (`main` run again and again) reads the same text each
    time, and the parser that keeps the keys' positions (for error messages) takes milliseconds
    on a few lines."""
    return yamlio.load(text)


def _explain(exc: ValidationError, tree: Any, source: str) -> ConfigError:
    error = exc.errors()[0]
    keys = [str(part) for part in error["loc"]]
    unknown = error["type"] == "extra_forbidden"
    if keys and keys[-1] == "[key]":  # a name inside a mapping such as reputation.weights
        keys = keys[:-1]
        # A name outside a fixed set is unknown; one of free names (review.agents) is a bad value.
        unknown = error["type"] == "literal_error"
        if not unknown:
            error["msg"] = f"the name {keys[-1]!r} is not an agent id"
    dotted = ".".join(keys)
    line = _line_of(tree, keys)
    where = f"{source}, line {line}" if line else source
    if unknown:
        return ConfigError(f"{where}: unknown key `{dotted}`", hint=_unknown_key_hint(keys))
    return ConfigError(
        f"{where}: bad value for `{dotted}`: {error['msg'].removeprefix('Value error, ')}",
        hint="see config/feedbackd.yaml for the allowed values",
    )


def _unknown_key_hint(keys: list[str]) -> str:
    known = _known_keys(keys[:-1])
    matches = difflib.get_close_matches(keys[-1], known, n=1, cutoff=0.5)
    if matches:
        return f"did you mean `{'.'.join([*keys[:-1], matches[0]])}`?"
    return f"remove it; known keys here: {', '.join(known)}" if known else "remove it"


def _line_of(tree: Any, keys: list[str]) -> int | None:
    node, line = tree, None
    for key in keys:
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            position, node = yamlio.item_position(node, int(key)), node[int(key)]
            line = position[0] if position else line
            continue
        if not isinstance(node, dict) or key not in node:
            break
        position = yamlio.key_position(node, key)
        line = position[0] if position else line
        node = node[key]
    return line


def _known_keys(parents: list[str]) -> list[str]:
    """The keys allowed under a dotted path: a section's fields or a fixed mapping's names."""
    annotation: Any = Settings
    for key in parents:
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        field = annotation.model_fields.get(key)
        annotation = field.annotation if field else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    if get_origin(annotation) is dict:
        return [str(name) for name in get_args(get_args(annotation)[0])]
    return []

"""Every path of a workspace in one object; ids (core.ids) keep every path inside it.

Paths only: what the disk holds at them (the agent folders, where a symbolic link leads) is
edges/files.py's to read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePath

from feedbackd.core.ids import validate_id

ITEM_SUFFIXES = (".json", ".yaml", ".yml", ".md")
# Editors' swap, backup and autosave files (vim, emacs), which stand beside a file being edited.
EDITOR_SUFFIXES = (".swp", ".swo", ".swx", "~")
EDITOR_NAMES = frozenset({"4913"})  # vim's test of whether it may write in a folder
EDITOR_PREFIXES = (".#",)
ERROR_SUFFIX = ".error"  # feedbackd's explanation beside a file it cannot use
# The folders of an agent that hold items: its drafts in queue/, and the two a curator moves one
# to, to decide it.
DECISION_FOLDERS = ("approved", "rejected")
ITEM_FOLDERS = ("queue", *DECISION_FOLDERS)
# Where a draft waits when several curators review it (review.required ≥ 2, SPEC section 15):
# review/ for the next curator's review, as first drafted; disputed/ when the reviews differ.
REVIEW_FOLDERS = ("review", "disputed")
ALL_ITEM_FOLDERS = (*ITEM_FOLDERS, *REVIEW_FOLDERS)  # every folder of an agent that holds items
STATE_DIR = ".feedbackd"
# True where os.sep is "/" (the core imports no os): a path's text joins its parts as git does.
_SLASHED = str(PurePath("a", "b")) == "a/b"


@dataclass(frozen=True)
class AgentPaths:
    """The files of one agent folder `_data/agents/{agent_id}/`."""

    root: Path
    agent_id: str

    @property
    def queue(self) -> Path:
        return self.root / "queue"

    @property
    def approved(self) -> Path:
        return self.root / "approved"

    @property
    def rejected(self) -> Path:
        return self.root / "rejected"

    @property
    def review(self) -> Path:
        """Drafts reviewed by fewer curators than required, waiting for the next one."""
        return self.root / "review"

    @property
    def disputed(self) -> Path:
        """Drafts whose reviews differ, waiting for a curator to settle them."""
        return self.root / "disputed"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback.json"

    @property
    def decisions(self) -> Path:
        """The committed ledger of decisions already recorded (exactly-once across machines)."""
        return self.root / "decisions.jsonl"

    @property
    def reviews(self) -> Path:
        """The reviews of items that need several curators (review.required ≥ 2)."""
        return self.root / "reviews.jsonl"

    @property
    def forgotten(self) -> Path:
        """The lessons a curator took back (`feedbackd forget`), kept from coming back."""
        return self.root / "forgotten.jsonl"

    @property
    def price_ledger(self) -> Path:
        """The price changes of the agent's skills, each written before its commit."""
        return self.root / "pricing.jsonl"

    @property
    def prompt(self) -> Path:
        return self.root / "prompt" / "feedback.md"

    @property
    def feedback_files(self) -> tuple[Path, Path, Path]:
        """feedback.json, decisions.jsonl and the snippet: made together, before any decision."""
        return (self.feedback, self.decisions, self.prompt)

    @property
    def soul(self) -> Path:
        return self.root / "SOUL.md"

    @property
    def ratings(self) -> Path:
        return self.root / "ratings"

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    def skill_prompt(self, skill_id: str) -> Path:
        return self.root / "prompt" / "skills" / f"{validate_id(skill_id, 'skill id')}.md"

    def folder(self, name: str) -> Path:
        return self.root / name


@dataclass(frozen=True)
class Workspace:
    """A git repository holding `_data/`; `data_dir` is configurable (default `_data`)."""

    root: Path
    data_dir: str = "_data"

    @property
    def data(self) -> Path:
        return self.root / self.data_dir

    @property
    def agents_dir(self) -> Path:
        return self.data / "agents"

    @property
    def inbox_ratings(self) -> Path:
        return self.data / "inbox" / "ratings"

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @property
    def config_file(self) -> Path:
        return self.root / "feedbackd.yaml"

    def agent(self, agent_id: str) -> AgentPaths:
        return AgentPaths(self.agents_dir / validate_id(agent_id, "agent id"), agent_id)

    def snapshot(self, agent_id: str, file_name: str) -> Path:
        """Where a draft is kept as feedbackd first saw it in queue/ (local state)."""
        return self.state_dir / "snapshots" / agent_id / file_name

    def relative(self, path: Path) -> str:
        """Path relative to the workspace root, with forward slashes (as git names it)."""
        # A pass names thousands of files: a slice of the text where it can do, as pathlib's
        # relative_to costs tens of microseconds a path.
        text, root = str(path), str(self.root)
        if _SLASHED and text.startswith(root) and text[len(root) : len(root) + 1] == "/":
            return text[len(root) + 1 :]
        return path.relative_to(self.root).as_posix()


def is_scratch(name: str) -> bool:
    """A name in an item folder that nobody means as a draft: a hidden file (`.gitkeep`,
    feedbackd's own temporary files), a `.error` report, an editor's swap or backup file."""
    return name.startswith(".") or is_report_or_editors(name)


def is_report_or_editors(name: str) -> bool:
    """A `.error` report, or an editor's swap, backup or autosave file."""
    return (
        name.endswith(ERROR_SUFFIX)
        or name.endswith(EDITOR_SUFFIXES)
        or name.startswith(EDITOR_PREFIXES)
        or (name.startswith("#") and name.endswith("#"))
        or name in EDITOR_NAMES
    )


def other_format(name: str, folder: str) -> tuple[str, str] | None:
    """For a plain file in an item folder (`folder`: queue, approved, rejected) that is not named
    as an item: what is wrong and how to fix it; None when it is an item file or scratch.

    A draft saved as `qi-307.txt` would otherwise wait, unseen, for ever."""
    if name.endswith(ITEM_SUFFIXES) or is_scratch(name):
        return None
    stem, dot, suffix = name.rpartition(".")
    kind = f".{suffix}" if dot and stem else "a file without extension"
    stem = stem if dot and stem else name
    return (
        f"{kind} is not an item format; feedbackd ignores this file",
        f"if it is a draft, save it as {stem}.json (or .yaml, .yml, .md) in that format;"
        f" otherwise move it out of {folder}/",
    )

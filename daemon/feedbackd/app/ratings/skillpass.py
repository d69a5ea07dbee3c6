"""One pass of the self-optimisation rules over one skill of one provider, and what it changed.

The rules are pure (core/ratings/skillrules.py); a pass reads what they need (SOUL.md, the skill's
ratings in the window, its price history) and carries out what they decide, each change planned
by core/ratings/plans.py and applied as every change is (app/commits/recording.py):

- a price change appends a line to the agent's price ledger `pricing.jsonl`, edits one
  `pricing:` line in SOUL.md, writes a `patterns` memory record (0.6), makes one `pricing`
  commit and then publishes SOUL.md (`pricing.sync_command`, app/ratings/publishing.py);
- a quality finding rewrites `prompt/skills/{skill}.md` and writes a `patterns` record (0.85)
  when the lessons changed, then may ask `optimizer.command` for a better description.

The base price and the time of the last change come from git (`Price-Old` and commit time of
the skill's pricing commits) and from the committed ledger, whichever knows more, so the rules
hold when git is disabled or a clone's history is shallow. The ledger is written first: a pass
killed before its commit is finished by the next one rather than cutting the price twice.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from feedbackd.app.commits.ledgers import not_in_head
from feedbackd.app.commits.recording import Event, apply_change
from feedbackd.app.ratings.publishing import publish_soul
from feedbackd.app.ratings.skillcommands import ask_optimizer
from feedbackd.app.workspace.agentfiles import (
    has_memory_line,
    read_lessons,
    read_price_ledger,
    read_soul,
)
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.changes import Change, Write
from feedbackd.core.commitmsg import (
    AGENT_KEY,
    EVENT_KEY,
    SKILL_KEY,
    one_line,
)
from feedbackd.core.errors import FeedbackdError
from feedbackd.core.ids import MEMORY_RECORD, derived_id, new_id
from feedbackd.core.ratings.memory import (
    PATTERNS,
    SELF_OPTIMISATION,
    MemoryRecord,
    memory_file,
)
from feedbackd.core.ratings.optimizer_command import SkillContext, command_context
from feedbackd.core.ratings.plans import (
    plan_optimization,
    plan_price_change,
    price_memory_id,
    skill_memory,
)
from feedbackd.core.ratings.priceledger import (
    PriceRecord,
    new_price_record,
    parse_price_ledger,
    price_history,
)
from feedbackd.core.ratings.skillrules import (
    NoChange,
    PriceChange,
    PriceHistory,
    QualityFinding,
    decide_price,
    decide_quality,
    lessons_as_json,
    lessons_in_brief,
    render_lessons,
)
from feedbackd.core.ratings.soul import format_price, set_description
from feedbackd.core.ratings.storedratings import AnyRating
from feedbackd.core.timeutil import parse_duration, parse_iso
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.randomness import random_chars
from feedbackd.edges.ratingstore import RatingStore

log = logging.getLogger("feedbackd")


@dataclass(frozen=True)
class SkillChange:
    """One change self-optimisation made (or, in a dry run, would make) to a provider's skill."""

    kind: str  # "pricing" or "optimize", the commit event
    agent: str
    skill: str
    summary: str
    why: str
    commit: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "agent": self.agent,
            "skill": self.skill,
            "summary": self.summary,
            "why": self.why,
            "commit": self.commit,
            "details": dict(self.details),
        }

    def as_event(self) -> Event:
        """The change as a pipeline event, for `run --once` output and `status` counts."""
        return Event(self.kind, self.agent, self.summary, None, self.commit, self.skill)


class SkillPass:
    """The rules of one skill of one provider, evaluated once at `now`."""

    def __init__(
        self,
        runtime: Runtime,
        repo: GitRepo | None,
        provider: str,
        skill: str,
        now: datetime,
        dry_run: bool,
    ) -> None:
        self.runtime = runtime
        self.repo = repo
        self.agent = runtime.workspace.agent(provider)
        self.skill = skill
        self.now = now
        self.dry_run = dry_run
        self.settings = runtime.settings
        self.window_label = self.settings.ratings.window
        self.window = parse_duration(self.window_label)
        self.changes: list[SkillChange] = []

    @property
    def patterns_path(self) -> Path:
        return memory_file(self.runtime.workspace, self.agent.agent_id, PATTERNS)

    def run(self) -> list[SkillChange]:
        if not self.agent.root.is_dir():
            return []
        if not self.dry_run:
            self._finish_interrupted()
        store = RatingStore(self.runtime.workspace, cache=self.runtime.rating_cache)
        ratings = store.ratings(self.agent.agent_id, self.skill, self.now - self.window)
        self._price_rule(ratings)
        self._quality_rule(ratings)
        return self.changes

    # --- price --------------------------------------------------------------------------------
    def _price_rule(self, ratings: Sequence[AnyRating]) -> None:
        soul = read_soul(self.agent)
        skill = soul[1].skill(self.skill) if soul is not None else None
        if soul is None or skill is None:
            log.debug("%s/%s: not priced in SOUL.md", self.agent.agent_id, self.skill)
            return
        decision = decide_price(
            skill.price,
            ratings,
            self.price_history(),
            self.settings.pricing,
            self.now,
            self.window,
        )
        if isinstance(decision, NoChange):
            log.debug("%s/%s: price stays: %s", self.agent.agent_id, self.skill, decision.reason)
            return
        self._apply_price(soul[0], decision)

    def price_history(self) -> PriceHistory:
        """Base price and last change of this skill, from git trailers and the ledger."""
        changes = [(parse_iso(r.createdAt), r.priceOld) for r in self._ledger()]
        if self.repo is not None:
            for entry in self.repo.trailer_log(
                {
                    EVENT_KEY: "pricing",
                    AGENT_KEY: self.agent.agent_id,
                    SKILL_KEY: self.skill,
                }
            ):
                changes.append((parse_iso(entry.date), entry.price_old or ""))
        return price_history(changes)

    def _apply_price(self, text: str, decision: PriceChange) -> None:
        old, new = format_price(decision.old), format_price(decision.new)
        details = {
            "price_old": old,
            "price_new": new,
            "direction": decision.direction,
            "base_price": format_price(decision.base),
            "floor" if decision.direction == "cut" else "cap": format_price(decision.limit),
            "samples": decision.samples,
        }
        if self.dry_run:
            self._record("pricing", decision.summary, decision.why, None, details)
            return
        earlier = self._ledger()
        after = earlier[-1].id if earlier else None
        record = new_price_record(self.skill, old, new, decision.why, self.now, after=after)
        # The ledger line first: it is what stops a second cut if the pass dies before its commit.
        sha = self._complete_price_change(record, text, stored=False)
        self._record("pricing", decision.summary, decision.why, sha, details)
        publish_soul(self.runtime, self.agent, self.skill, self.now, (old, new))

    def _complete_price_change(self, record: PriceRecord, text: str, stored: bool) -> str | None:
        """Ledger line (unless `stored`: one a killed pass left), SOUL.md, memory and commit."""
        remembered = has_memory_line(self.patterns_path, price_memory_id(record))
        change = plan_price_change(
            self.agent,
            self.patterns_path,
            record,
            text,
            self.now,
            stored=stored,
            remembered=remembered,
        )
        return self._apply(change)

    def _ledger(self) -> list[PriceRecord]:
        return [r for r in read_price_ledger(self.agent) if r.skill == self.skill]

    def _finish_interrupted(self) -> None:
        """Complete a price change whose ledger line was written but never committed."""
        ledger = self.agent.price_ledger
        if self.repo is None or not ledger.exists():
            return
        pending = not_in_head(
            self.repo,
            self.runtime.workspace,
            ledger,
            self._ledger(),
            head_ids=lambda text: [record.id for record in parse_price_ledger(text)],
            id_of=lambda record: record.id,
        )
        soul = read_soul(self.agent)
        if not pending or soul is None or soul[1].skill(self.skill) is None:
            return
        log.info("%s/%s: completing an interrupted price change", self.agent.agent_id, self.skill)
        self._complete_price_change(pending[-1], soul[0], stored=True)

    # --- quality ------------------------------------------------------------------------------
    def _quality_rule(self, ratings: Sequence[AnyRating]) -> None:
        finding = decide_quality(ratings, self.settings.optimizer, self.window_label)
        if isinstance(finding, NoChange):
            log.debug("%s/%s: no lessons: %s", self.agent.agent_id, self.skill, finding.reason)
            return
        if self._apply_lessons(finding):
            self._ask_optimizer(finding, ratings)

    def _apply_lessons(self, finding: QualityFinding) -> bool:
        """Rewrite the skill's lessons file when its text changes; True when it did."""
        text = render_lessons(finding.lessons)
        before = read_lessons(self.agent, self.skill)
        if not text:
            return False
        if before == text:
            self._finish_lessons(finding, text)
            return False
        summary, details = self._lessons_summary(finding), self._lessons_details(finding)
        if self.dry_run:
            self._record("optimize", summary, finding.why, None, details)
            return True
        sha = self._commit_lessons(finding, text, before or "", stored=False)
        self._record("optimize", summary, finding.why, sha, details)
        return True

    def _finish_lessons(self, finding: QualityFinding, text: str) -> None:
        """Commit the lessons file that a pass killed before its commit wrote: its memory
        record too (unless written already), as the uninterrupted pass would have."""
        if self.dry_run or self.repo is None:
            return
        rel = self.runtime.workspace.relative(self.agent.skill_prompt(self.skill))
        committed = self.repo.file_at_head(rel)
        before = committed.decode("utf-8", errors="replace") if committed is not None else ""
        if before == text:
            return
        log.info("%s/%s: completing an interrupted lessons change", self.agent.agent_id, self.skill)
        self._commit_lessons(finding, text, before, stored=True)

    def _commit_lessons(
        self, finding: QualityFinding, text: str, before: str, *, stored: bool
    ) -> str | None:
        """The lessons file (unless `stored`), the memory of why, one `optimize` commit."""
        path = self.agent.skill_prompt(self.skill)
        rel = self.runtime.workspace.relative(path)
        noun = "lesson" if len(finding.lessons) == 1 else "lessons"
        what = f"{len(finding.lessons)} {noun} in {rel} ({lessons_in_brief(finding.lessons)})"
        # Its id is what the change is, as a price cut's: machines that draw the same lessons
        # from the same ratings (each after a pull) make one record, and one commit survives.
        record_id = derived_id(MEMORY_RECORD, "lessons", self.skill, before, text)
        why = f"Skill {self.skill} adjusted: {what} because {finding.why}"
        body = [
            f"- why: {finding.why}",
            f"- lessons: {rel}",
            *(f'- "{lesson.text}" ({lesson.count}×)' for lesson in finding.lessons),
        ]
        remembered = has_memory_line(self.patterns_path, record_id)
        change = plan_optimization(
            self.agent,
            self.skill,
            Write(path, text),
            self._memory(why, record_id),
            self.patterns_path,
            (self._lessons_summary(finding), body),
            stored=stored,
            remembered=remembered,
        )
        return self._apply(change)

    def _lessons_summary(self, finding: QualityFinding) -> str:
        noun = "lesson" if len(finding.lessons) == 1 else "lessons"
        ratings = "rating" if finding.low_count == 1 else "ratings"
        return f"{len(finding.lessons)} {noun} from {finding.low_count} low {ratings}"

    def _lessons_details(self, finding: QualityFinding) -> dict[str, Any]:
        rel = self.runtime.workspace.relative(self.agent.skill_prompt(self.skill))
        return {"what": "lessons", "path": rel, "lessons": lessons_as_json(finding.lessons)}

    def _ask_optimizer(self, finding: QualityFinding, ratings: Sequence[AnyRating]) -> None:
        command = self.settings.optimizer.command
        soul = read_soul(self.agent)
        skill = soul[1].skill(self.skill) if soul is not None else None
        if command is None or soul is None or skill is None or self.dry_run:
            return
        about = SkillContext(
            self.agent.agent_id, self.skill, skill.description, skill.price, self.window_label
        )
        context = command_context(about, finding, ratings)
        answer = ask_optimizer(self.runtime, self.agent, self.skill, context)
        if answer is None:
            return
        if " ".join(answer.description.split()) == skill.description:
            log.info("optimizer.command kept the description of %s", self.skill)
            return
        self._apply_description(soul[0], skill.description, answer.description, answer.reason)

    def _apply_description(self, text: str, old: str, description: str, reason: str) -> None:
        try:
            new_text = set_description(text, self.skill, description)
        except FeedbackdError as exc:
            log.warning("optimizer.command: unusable description: %s; nothing changed", exc)
            return
        summary = f"new description ({one_line(reason, 80)})"
        why = f"Skill {self.skill} adjusted: description rewritten because {reason}"
        memory = self._memory(why, new_id(MEMORY_RECORD, self.now, random_chars))
        body = [f"- why: {reason}", f'- description: "{old}" → "{description}"']
        soul = Write(self.agent.soul, new_text, exact=True)
        sha = self._optimize(soul, memory, (summary, body))
        details = {"what": "description", "description_old": old, "description_new": description}
        self._record("optimize", summary, reason, sha, details)
        publish_soul(self.runtime, self.agent, self.skill, self.now)

    # --- shared -------------------------------------------------------------------------------
    def _memory(self, content: str, record_id: str) -> MemoryRecord:
        return skill_memory(self.skill, SELF_OPTIMISATION, content, "optimize", self.now, record_id)

    def _optimize(
        self, written: Write, memory: MemoryRecord, message: tuple[str, list[str]]
    ) -> str | None:
        """One `optimize` commit of the rewritten file and the memory of why; its body says
        why (the memory record does too, but `git log` is where a reviewer reads the history)."""
        patterns = self.patterns_path
        return self._apply(
            plan_optimization(self.agent, self.skill, written, memory, patterns, message)
        )

    def _apply(self, change: Change) -> str | None:
        done = apply_change(self.runtime, self.repo, change)
        return done.commit if done is not None else None

    def _record(
        self, kind: str, summary: str, why: str, sha: str | None, details: dict[str, Any]
    ) -> None:
        change = SkillChange(kind, self.agent.agent_id, self.skill, summary, why, sha, details)
        self.changes.append(change)

"""Self-optimisation's entry points: one skill after a rating, every skill for `optimize`.

Each skill gets one SkillPass at one moment. A pass that follows a rating never fails that rating:
its errors are logged, not raised (`rules_hook`).
"""

from __future__ import annotations

import logging
from datetime import datetime

from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.commits.recording import Event
from feedbackd.app.ratings.skillpass import SkillChange, SkillPass
from feedbackd.app.workspace.agentfiles import existing_agent, read_soul
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.errors import FeedbackdError
from feedbackd.core.ids import validate_id
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import agent_ids
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.ratingstore import RatingStore

log = logging.getLogger("feedbackd")


def run_rules(
    runtime: Runtime,
    repo: GitRepo | None,
    provider: str,
    skill: str,
    now: datetime,
    *,
    dry_run: bool = False,
) -> list[SkillChange]:
    """Evaluate the price and quality rules of one skill and apply what they decide."""
    return SkillPass(runtime, repo, provider, validate_id(skill, "skill id"), now, dry_run).run()


def rules_hook(
    runtime: Runtime, repo: GitRepo | None, provider: str, skill: str, now: datetime
) -> list[Event]:
    """run_rules for the ratings flow: events out, and never an error for a rating that stands."""
    try:
        return [change.as_event() for change in run_rules(runtime, repo, provider, skill, now)]
    except FeedbackdError as exc:
        log.warning("self-optimisation of %s/%s failed: %s", provider, skill, exc)
        return []
    except Exception:  # a bug in a rule: the rating is committed, so say so and carry on
        log.exception("self-optimisation of %s/%s failed unexpectedly", provider, skill)
        return []


def optimize_all(runtime: Runtime, agent: str | None, *, dry_run: bool) -> list[SkillChange]:
    """`feedbackd optimize`: every skill of one agent (or of all agents)."""
    agents = [existing_agent(runtime, agent).agent_id] if agent is not None else None
    now = utcnow()
    changes: list[SkillChange] = []
    with open_repo(runtime) as repo:
        for agent_id in agents if agents is not None else agent_ids(runtime.workspace):
            for skill in skills_of(runtime, agent_id):
                changes.extend(run_rules(runtime, repo, agent_id, skill, now, dry_run=dry_run))
    return changes


def skills_of(runtime: Runtime, agent: str) -> list[str]:
    """Skills named in the agent's SOUL.md, then any others it has ratings for."""
    soul = read_soul(runtime.workspace.agent(agent))
    named = [s.skill_id for s in soul[1].skills] if soul is not None else []
    rated = RatingStore(runtime.workspace).skills(agent)
    return list(dict.fromkeys([*named, *rated]))

"""Ratings of rented skills as commits: `feedback submit` and files dropped in the inbox.

Each rating is one commit holding the provider's rating line and the requester's memory of the
rental, planned by core/ratings/plans.py and applied as every change is (app/commits/
recording.py). A rating line written by a pass that was killed before its commit is completed
(the memory it lacks) and committed by the next full pass (`commit_interrupted`), so nothing is
lost and nothing is stored twice.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from feedbackd.app.commits.ledgers import appended_since_head, commit_uncommitted
from feedbackd.app.commits.recording import (
    CommitRequest,
    Event,
    apply_change,
    commit_change,
    write_change,
)
from feedbackd.app.ratings.selfoptimize import rules_hook
from feedbackd.app.workspace import problems
from feedbackd.app.workspace.agentfiles import has_memory_line, new_provider_warning
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.changes import Append, Change, Remove
from feedbackd.core.commitmsg import TRANSACTION_KEY
from feedbackd.core.errors import AlreadySubmitted, FeedbackdError, InvalidFeedback
from feedbackd.core.ids import is_valid_id
from feedbackd.core.ratings.memory import PATTERNS, MemoryRecord, memory_file, rental_memories
from feedbackd.core.ratings.plans import plan_rating, rating_commit
from feedbackd.core.ratings.priceledger import parse_price_ledger
from feedbackd.core.ratings.records import (
    MAX_INBOX_CHARS,
    Rating,
    parse_rating,
    parse_rating_file,
    stored_fields,
)
from feedbackd.core.ratings.storedratings import AnyRating
from feedbackd.core.timeutil import parse_duration
from feedbackd.core.wording import Progress, counted
from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import Undo, agent_ids, atomic_write_text, is_inside, read_file_bytes
from feedbackd.edges.git.headfile import head_commit
from feedbackd.edges.git.repo import GitRepo, HeadMoved
from feedbackd.edges.ratingstore import RatingStore

log = logging.getLogger("feedbackd")
# Times a rating is recorded when a `git clean` removed its files before the commit held them
_RECORD_ATTEMPTS = 3


def requester_for(runtime: Runtime, as_agent: str | None) -> str | None:
    return as_agent or runtime.settings.agent_id


def submit(
    runtime: Runtime,
    repo: GitRepo | None,
    payload: str,
    as_agent: str | None,
    progress: Progress | None = None,
) -> tuple[Event, list[Event]]:
    """Validate, store and commit one rating (`feedbackd feedback submit`), then apply the
    provider's rules; returns the rating's event and the changes the rules made. `progress`
    follows the indexing of the ratings (all of them after a fresh clone)."""
    now = utcnow()
    rating = parse_rating(payload, requester=requester_for(runtime, as_agent), now=now)
    event = record_rating(runtime, repo, rating, now, progress=progress)
    return event, apply_rules(runtime, repo, [event])


def queue_in_inbox(runtime: Runtime, payload: str, as_agent: str | None) -> Path:
    """Check one rating as `submit` does and leave it in the rating inbox, where the daemon's
    next pass records it; for a workspace the daemon holds longer than a command may wait."""
    rating = parse_rating(payload, requester=requester_for(runtime, as_agent), now=utcnow())
    store = RatingStore(runtime.workspace, cache=runtime.rating_cache)
    where = runtime.workspace.inbox_ratings / f"{rating.transaction_id}.json"
    if store.has_transaction(rating.transaction_id) or where.exists():
        raise AlreadySubmitted(
            f"transaction {rating.transaction_id} was already rated (or waits in "
            f"{runtime.workspace.relative(where.parent)}/)",
            hint="each rental is rated once; a new rental has a new transaction_id",
        )
    # The rating as it would be stored (its time and requester fixed now), one file of its own.
    atomic_write_text(where, rating.model_dump_json(exclude_none=True))
    return where


def apply_rules(runtime: Runtime, repo: GitRepo | None, events: Sequence[Event]) -> list[Event]:
    """Run the self-optimisation rules once for each skill that was just rated."""
    rated = sorted({(e.agent, e.skill) for e in events if e.event == "rating" and e.skill})
    now = utcnow()
    return [
        change for agent, skill in rated for change in rules_hook(runtime, repo, agent, skill, now)
    ]


def _rules_for_changed(
    runtime: Runtime, repo: GitRepo | None, changed: Sequence[str]
) -> list[Event]:
    """Run the rules once for each skill whose rating files are among `changed` (paths as git
    names them). Machines that cut after the same pull make one change (its id says what it
    is), which the next sync keeps once."""
    workspace = runtime.workspace
    rated = set()
    for path in changed:
        under = workspace.root / path
        if under.is_relative_to(workspace.agents_dir):
            relative = under.relative_to(workspace.agents_dir)
            if _is_rating_log(relative) and all(map(is_valid_id, relative.parts[:3])):
                rated.add((relative.parts[0], relative.parts[2]))
    now = utcnow()
    return [
        change
        for agent, skill in sorted(rated)
        for change in rules_hook(runtime, repo, agent, skill, now)
    ]


RULES_SEEN = "rules-seen"  # in .feedbackd/: the commit whose ratings the rules have seen


def rules_for_arrived(runtime: Runtime, repo: GitRepo | None) -> list[Event]:
    """Run the rules for the skills whose ratings came in since the last full pass by any way
    but a submit here: feedbackd's own sync (the pass after its pull), a user's `git pull` or
    merge. Buyers rate on machines of their own, so a price cut may be called for only once
    their ratings meet. The commit the rules last caught up with is kept in `.feedbackd/`; a
    workspace that has none yet starts from HEAD. Running the rules twice for one rating
    changes nothing the second time, so a rating submitted here and seen again is harmless."""
    if repo is None:
        return []
    head = _head(runtime, repo)
    marker = runtime.workspace.state_dir / RULES_SEEN
    seen = _read_marker(marker)
    if head is None or seen == head:
        return []
    events: list[Event] = []
    if seen is not None and repo.rev(seen) is not None:  # gone after a gc: start again
        events = _rules_for_changed(runtime, repo, repo.listings.paths_changed(seen, head))
    try:  # not durable: a marker lost to a crash only makes the next pass start from HEAD
        atomic_write_text(marker, (_head(runtime, repo) or head) + "\n", durable=False)
    except OSError as error:  # a full disk: the rules run again next time, which is harmless
        log.debug("cannot write %s: %s", marker, error)
    return events


def _head(runtime: Runtime, repo: GitRepo) -> str | None:
    """HEAD's commit from git's own files where they say (no process started), else git's."""
    return head_commit(runtime.workspace.root / ".git") or repo.head()


def _read_marker(path: Path) -> str | None:
    try:
        text = read_file_bytes(path).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if re.fullmatch(r"[0-9a-f]{40,64}", text) else None


def record_rating(
    runtime: Runtime,
    repo: GitRepo | None,
    rating: Rating,
    now: datetime,
    also: Sequence[Path] = (),
    *,
    progress: Progress | None = None,
) -> Event:
    """Append the rating, write the requester's memory, commit both (plus `also`, removed)."""
    store = RatingStore(runtime.workspace, progress=progress, cache=runtime.rating_cache)
    # The requester's profile of the provider sums up its recent rentals (the ratings window):
    # a busy provider has a million ratings, and reading them all would make each submit slow.
    window = parse_duration(runtime.settings.ratings.window)
    earlier = store.ratings(
        rating.provider_agent, since=now - window, requester=rating.requester_agent
    )
    warning = new_provider_warning(runtime, rating.provider_agent)  # before its folder exists
    change, event = _recorded(runtime, repo, store, rating, now, earlier, also)
    summary = change.commit.summary
    event = event or Event("rating", rating.provider_agent, summary, skill=rating.skill_id)
    if warning is None:
        return event
    log.warning("%s", warning)
    return replace(event, warnings=(warning,))


def _recorded(
    runtime: Runtime,
    repo: GitRepo | None,
    store: RatingStore,
    rating: Rating,
    now: datetime,
    earlier: Sequence[AnyRating],
    also: Sequence[Path],
) -> tuple[Change, Event | None]:
    """_record_once, again when what it wrote was taken back (a `git clean` ran meanwhile)."""
    for attempt in range(1, _RECORD_ATTEMPTS + 1):
        try:
            return _record_once(runtime, repo, store, rating, now, earlier, also)
        except _TakenBack:
            if attempt == _RECORD_ATTEMPTS:
                raise
            log.info(
                "%s: a file of it was removed before its commit; recorded again",
                rating.transaction_id,
            )
    raise AssertionError("unreachable: the last attempt returns or raises")


class _TakenBack(HeadMoved):
    """A rating's commit was not made, and what recording it wrote is taken back."""


def _record_once(
    runtime: Runtime,
    repo: GitRepo | None,
    store: RatingStore,
    rating: Rating,
    now: datetime,
    earlier: Sequence[AnyRating],
    also: Sequence[Path],
) -> tuple[Change, Event | None]:
    """Append the rating and the buyer's memory, remove `also`, commit; _TakenBack when a
    `git clean` removed one of the appended files before the commit stored it (it takes no
    lock): the commit would have left the rating stored nowhere, its inbox file gone."""
    change = plan_rating(runtime.workspace, rating, now, earlier, runtime.committer, also=also)
    logs = [action.path for action in change.actions if isinstance(action, Append)]
    with repo.holding_on_top() if repo is not None else nullcontext(), Undo(also, logs) as undo:
        # From here to the commit nothing of the user's git runs but a lockless `git clean`: a
        # reset in between would undo the stored line after the inbox file that held it is gone.
        store.refuse_rated(rating)
        write_change(change)
        try:
            return change, commit_change(runtime, repo, replace(change.commit, needed=logs))
        except HeadMoved as moved:
            if not undo.undo():
                raise
            raise _TakenBack(moved.message, hint=moved.hint) from moved


# The buyer in a rating commit's summary (plans.rating_summary): an id, with no space.
_BUYER = re.compile(r"[0-9]+/5 \S+ from (\S+) \(")


def buyer_named(summary: str) -> str | None:
    """Who rated, read back from a rating commit's summary (the learning history shows it);
    None when the summary is not one rating_summary wrote."""
    found = _BUYER.match(summary)
    return found.group(1) if found else None


# --- the inbox --------------------------------------------------------------------------------
def ingest_inbox(
    runtime: Runtime, repo: GitRepo | None, keep_going: Callable[[], bool] | None = None
) -> tuple[list[Event], list[problems.Problem]]:
    """Record every rating file in `_data/inbox/ratings/`, removing each once committed.
    keep_going is asked before each file: the daemon stops between two files for a command
    waiting for the workspace (the files left are read by its next pass)."""
    folder = runtime.workspace.inbox_ratings
    events: list[Event] = []
    found: list[problems.Problem] = []
    if not folder.is_dir():
        return events, found
    problems.clear_orphans(folder)
    for path in sorted(folder.glob("*.json")):
        if keep_going is not None and not keep_going():
            break
        try:
            ratings = _read_inbox_file(runtime, path)
        except FeedbackdError as error:
            found.append(problems.judge(path, error, runtime.settings.daemon.settle_ms))
            continue
        problems.clear(path)
        events.extend(_ingest(runtime, repo, path, ratings))
    events.extend(apply_rules(runtime, repo, events))
    return events, found


def _read_inbox_file(runtime: Runtime, path: Path) -> list[Rating]:
    """The ratings of one inbox file. A folder, a pipe, a loop of links or a link leading out
    of the workspace is refused like a bad file (explained beside it, never opened to wait)."""
    if path.is_symlink() and path.exists() and not is_inside(runtime.workspace, path):
        raise InvalidFeedback(
            "symbolic link leads outside the workspace; ignored",
            hint="copy the rating file into the inbox instead of linking to it",
        )
    try:
        data = read_file_bytes(path, limit=MAX_INBOX_CHARS)
    except OSError as exc:
        raise InvalidFeedback(
            f"the file cannot be read: {exc.strerror or exc}",
            hint="drop ratings here as plain, readable .json files",
        ) from None
    if len(data) > MAX_INBOX_CHARS:
        raise InvalidFeedback(
            f"the file is over the {MAX_INBOX_CHARS} byte limit",
            hint="split the ratings over several files",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidFeedback(f"not UTF-8 (byte {exc.start})", hint="save it as UTF-8") from None
    return parse_rating_file(text, requester=runtime.settings.agent_id, now=utcnow())


def _ingest(
    runtime: Runtime, repo: GitRepo | None, path: Path, ratings: list[Rating]
) -> list[Event]:
    events = []
    store = RatingStore(runtime.workspace)
    fresh = [r for r in ratings if not store.has_transaction(r.transaction_id)]
    if len(fresh) < len(ratings):
        stored = counted(len(ratings) - len(fresh), "rating")
        log.info("%s: %s already stored", path.name, stored)
    for number, rating in enumerate(fresh, start=1):
        last = number == len(fresh)
        try:
            events.append(record_rating(runtime, repo, rating, utcnow(), [path] if last else []))
        except AlreadySubmitted:
            continue
    if path.exists():  # every rating in it was stored already (a retry after a crash)
        first = ratings[0]
        summary = f"{path.name} removed from the inbox, its ratings already stored"
        commit = CommitRequest(
            "rating", first.provider_agent, summary, [path], skill=first.skill_id
        )
        # A commit only when git tracked the inbox file.
        apply_change(runtime, repo, Change(commit, (Remove(path),)))
    return events


# --- recovery ---------------------------------------------------------------------------------
def commit_interrupted(runtime: Runtime, repo: GitRepo | None) -> list[Event]:
    """Commit rating and memory lines that a killed command appended but never committed.

    Only files that grew by appending are taken: a person's own edit of such a file is theirs.
    """
    if repo is None or not runtime.workspace.agents_dir.is_dir():
        return []
    workspace = runtime.workspace
    paths = [
        workspace.relative(path)
        for agent in agent_ids(workspace)
        for path in (
            workspace.agent(agent).ratings,
            workspace.agent(agent).memory,
            workspace.agent(agent).price_ledger,
        )
        if path.exists()
    ]
    if not paths:
        return []
    # Only these are looked at: git status over all agents reads every draft's file.
    changed = repo.listings.changed_paths(*paths)
    logs = [workspace.root / rel for rel in changed if _is_rental_log(rel)]
    # The buyer's memory a killed submit did not write yet (its lines are the rating's too).
    remembered = _complete_memories(runtime, repo, [log for log in logs if _is_rating(log)])
    logs += [path for path in remembered if path not in logs]
    pending = {log: appended_since_head(repo, workspace, log) for log in logs}

    def completed(appended: dict[Path, list[str]]) -> CommitRequest:
        return _completed_request(runtime, appended)

    event = commit_uncommitted(runtime, repo, pending, completed)
    rated = [event] if event else []
    skill_logs = [workspace.root / rel for rel in changed if _is_skill_log(rel)]
    # The killed command never ran the rules its rating calls for: they run now.
    after = [
        *_finish_skill_changes(runtime, repo, skill_logs),
        *apply_rules(runtime, repo, rated),
    ]
    return [*rated, *after]


def _completed_request(runtime: Runtime, appended: dict[Path, list[str]]) -> CommitRequest:
    """The commit of what a killed command appended: shaped as the rating commit it never made
    (the provider in its subject, the transaction in its trailers, the buyer its author), so
    `log` and a reader of the history cannot tell it from an uninterrupted one."""
    agents_dir = runtime.workspace.agents_dir
    ratings = [
        rating
        for path, lines in appended.items()
        if _is_rating_log(path.relative_to(agents_dir))
        for rating in _readable_ratings(lines)
    ]
    files = list(appended)
    if len(ratings) == 1:
        [only] = ratings
        return rating_commit(only, files, runtime.committer)
    if ratings:  # several commands killed in a row: one commit naming each transaction
        first = ratings[0]
        return CommitRequest(
            "rating",
            first.provider_agent,
            f"{len(ratings)} ratings completed after an interruption",
            files,
            skill=first.skill_id,
            trailers=[(TRANSACTION_KEY, r.transaction_id) for r in ratings],
        )
    agent = next(iter(appended)).relative_to(agents_dir).parts[0]  # memory lines alone
    noun = "file" if len(appended) == 1 else "files"
    summary = f"{len(appended)} {noun} completed after an interruption"
    return CommitRequest("rating", agent, summary, files)


def _complete_memories(runtime: Runtime, repo: GitRepo, rating_logs: list[Path]) -> list[Path]:
    """Write the memory records of the ratings appended to `rating_logs` since HEAD that a
    killed submit did not write (each record once: its id derives from the transaction), as
    the submit would have; the memory files written."""
    workspace, now, committer = runtime.workspace, utcnow(), runtime.committer
    store = RatingStore(workspace, cache=runtime.rating_cache)
    since = now - parse_duration(runtime.settings.ratings.window)
    written: list[Path] = []
    for path in rating_logs:
        for rating in _readable_ratings(appended_since_head(repo, workspace, path)):
            buyer = rating.requester_agent
            earlier = store.ratings(rating.provider_agent, since=since, requester=buyer)
            remembered = _remembered(workspace, rating, now)
            change = plan_rating(
                workspace, rating, now, earlier, committer, stored=True, remembered=remembered
            )
            write_change(change)
            written += [action.path for action in change.actions]
    return written


def _remembered(workspace: Workspace, rating: Rating, now: datetime) -> set[str]:
    """The ids of the rental's memory records that the buyer's memory holds already."""
    return {
        record.id
        for agent, record in rental_memories(rating, now)
        if has_memory_line(memory_file(workspace, agent, record.category), record.id)
    }


def _readable_ratings(lines: Sequence[str]) -> list[Rating]:
    """The ratings among appended lines; a line that does not read as one is left out."""
    found = []
    for line in lines:
        try:
            found.append(Rating.model_validate(stored_fields(line)))
        except (FeedbackdError, ValueError):
            continue
    return found


def _finish_skill_changes(runtime: Runtime, repo: GitRepo, logs: list[Path]) -> list[Event]:
    """Self-optimisation changes a killed pass began but never committed (a line in
    `pricing.jsonl`, a record in the `patterns` memory): the skill's rules run again, and they
    complete the change first (no buyer may rate it soon)."""
    workspace = runtime.workspace
    begun = set()
    for log_path in logs:
        appended = appended_since_head(repo, workspace, log_path)
        agent = log_path.relative_to(workspace.agents_dir).parts[0]
        begun |= {(agent, skill) for skill in _skills_named(log_path, appended)}
    now = utcnow()
    return [
        event
        for agent, skill in sorted(begun)
        for event in rules_hook(runtime, repo, agent, skill, now)
    ]


def _skills_named(log_path: Path, appended: list[str]) -> set[str]:
    """The skills whose changes the lines appended to a price ledger or `patterns` name."""
    if log_path.name == "pricing.jsonl":
        return {record.skill for record in parse_price_ledger("\n".join(appended))}
    skills = set()
    for line in appended:
        try:
            subject = MemoryRecord.model_validate_json(line).subject
        except ValueError:
            continue  # a damaged line names nothing
        if subject is not None and is_valid_id(subject):
            skills.add(subject)
    return skills


def _is_rental_log(rel: str) -> bool:
    """A rating log or the buyer's memory of rentals; not the `patterns` memory, which only
    self-optimisation writes and whose commits hold it (`_finish_skill_changes`)."""
    parts = rel.split("/")
    if _is_skill_log(rel):
        return False
    return rel.endswith(".jsonl") and ("ratings" in parts or "memory" in parts)


def _is_skill_log(rel: str) -> bool:
    return rel.endswith(("/pricing.jsonl", f"/memory/{PATTERNS}.jsonl"))


def _is_rating(path: Path) -> bool:
    return path.parent.parent.name == "ratings"


def _is_rating_log(under_agents: Path) -> bool:
    """`{provider}/ratings/{skill}/{YYYY-MM}.jsonl`, relative to the agents folder."""
    parts = under_agents.parts
    return len(parts) == 4 and parts[1] == "ratings" and parts[3].endswith(".jsonl")

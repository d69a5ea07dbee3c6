"""One pass over one agent folder: read it, ask the planner what is missing, apply the plan.

Applying is small on purpose: each step of the plan writes its files atomically, appends its
ledger lines and makes one commit of exactly its paths. Every step is idempotent, so a pass
killed at any line is finished by the next one: feedback entries are de-duplicated, the ledger
says what is decided, and ledger lines that never reached a commit are committed first thing
by the next pass.

A plan holds what the folder and HEAD were when the pass read them (feedback.json with every
lesson so far). Each step is applied holding git's index lock, and only while HEAD still is the
commit the pass started from (or its own last one) and the file it decides is as it was read:
after a user's `git reset --hard` the pass reads the folder again rather than write back
lessons of decisions the reset dropped, and after a `git stash -u` took an approval away it
records no decision whose file is gone.
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from feedbackd.app.commits.ledgers import (
    CommittedLedgers,
    commit_uncommitted,
    not_in_head,
)
from feedbackd.app.commits.openrepo import open_repo_for_writing
from feedbackd.app.commits.recording import CommitRequest, write_change
from feedbackd.app.curation import agentrename
from feedbackd.app.curation.agentread import (
    AgentReader,
    ReadScope,
    current_snippet,
    uncommitted_files,
)
from feedbackd.app.curation.draftmemory import remember_drafts
from feedbackd.app.report import Report
from feedbackd.app.reviews.reviewread import ReviewReading
from feedbackd.app.workspace import problems
from feedbackd.app.workspace.agentfiles import read_forgotten_text, read_ledger
from feedbackd.app.workspace.problems import Problem
from feedbackd.app.workspace.runtime import Runtime, choose_author
from feedbackd.app.workspace.told import FileKey, file_key
from feedbackd.core import commitmsg
from feedbackd.core.changes import Change, Remove
from feedbackd.core.curation import agentplan, decisions
from feedbackd.core.curation.agentplan import AgentPlan, BadFile, Refusal, Step
from feedbackd.core.curation.decisions import DecisionRecord
from feedbackd.core.curation.feedback import FeedbackEntry
from feedbackd.core.curation.forgetting import already_forgotten, find_entry, forgotten_line
from feedbackd.core.errors import FeedbackdError, InvalidFeedback, KeptChanging, NotFound
from feedbackd.core.people import Person
from feedbackd.core.reviews.reviewsteps import ReviewSteps
from feedbackd.core.wording import Progress, counted, noun
from feedbackd.core.workspacepaths import DECISION_FOLDERS, ITEM_SUFFIXES, REVIEW_FOLDERS
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import Undo, atomic_write_text, file_state
from feedbackd.edges.git.repo import GitRepo, HeadMoved, HeldIndexLock
from feedbackd.edges.randomness import random_chars

log = logging.getLogger("feedbackd")
Lines = Collection[str]  # lines of the log

# Times a pass reads its folder again because HEAD moved under it before it gives up (the
# daemon then tries again later, as after any other failure).
_READS = 3
# Decisions applied in one run holding git's index lock (see AgentPass._apply_run): where the
# index follows the run once (a big one), fewer than the recent commits whose index entries
# heal_index checks after a crash (20); a small index follows each commit, and the run is
# bounded by time alone. A run lets go of the lock within RUN_S, then leaves it free for
# RUN_GAP_S: a user's git command that met the lock (git does not wait for it) gets in when
# run again, as between two decisions.
RUN_STEPS = 16
RUN_S = 0.25
RUN_GAP_S = 0.02


class ReadAgain(Exception):
    """A file a step decides changed (or went away) since the pass read it."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


class AgentPass:
    """One pass over one agent folder."""

    def __init__(
        self,
        runtime: Runtime,
        repo: GitRepo | None,
        agent_id: str,
        ledgers: CommittedLedgers,
        keep_going: Callable[[], bool] | None = None,
        scope: ReadScope | None = None,
        on_decision: Progress | None = None,
    ) -> None:
        self.runtime = runtime
        self.on_decision = on_decision  # hears (decisions done, decisions found) as they go
        self.repo = repo
        self.ledgers = ledgers
        self.keep_going = keep_going or (lambda: True)
        self.agent = runtime.workspace.agent(agent_id)
        self.reader = AgentReader(runtime, repo, self.agent, scope, ledgers)
        self.report = Report()
        # The commit the pass planned on: read before the folder, then the pass's own last one.
        self.head = repo.settled_head() if repo is not None else None
        # git's index lock, while a step's commit may be made
        self._held: HeldIndexLock | None = None
        self.saw_links = False  # among the items read (quietagents.py keeps no digest then)

    def run(self) -> Report:
        """The pass; OSError when the agent folder cannot be used (the ledger cannot be read,
        a file stands where a folder must be, the disk is full). When HEAD moves under it (a
        user's `git reset`, `pull`, commit), the folder is read again and planned anew."""
        for reading in range(1, _READS + 1):
            try:
                return self._run()
            except (HeadMoved, ReadAgain) as moved:
                if reading == _READS:
                    raise KeptChanging(
                        f"the folder kept changing while feedbackd read it: {moved}",
                        hint="it is read again shortly",
                    ) from moved
                log.info("%s: %s; reading it again", self.agent.agent_id, moved)
                if isinstance(moved, ReadAgain):
                    # Whoever changed it (a `git stash`, `pop`) may not be done: look again soon.
                    self.report.problems.append(_still_changing(moved.path, time.time() + 0.5))
                self.head = self.repo.settled_head() if self.repo is not None else None
                self.reader = self.reader.again()
        raise AssertionError("unreachable: the last reading returns or raises")

    def _run(self) -> Report:
        ledger = read_ledger(self.agent.decisions)
        if not self.agent.root.is_dir():
            return self.report
        try:
            self._pass(ledger)
        except FileNotFoundError:
            if self.agent.root.is_dir():
                raise
            # Moved away (renamed) meanwhile: the pass over its new folder does what is left.
            log.info("%s: the agent folder was moved away during its pass", self.agent.agent_id)
        return self.report

    def _pass(self, ledger: Sequence[DecisionRecord]) -> None:
        renamed = agentrename.follow_rename(self.runtime, self.repo, self.agent)
        if renamed is not None:
            self.report.events.append(renamed)
            self.head = renamed.commit  # the folder is read after the move: plan on it
            # The shared listing of untracked files was made before the move: ask git anew.
            # (The drafts' commits follow HEAD, the move's commit included.)
            self.reader.first_versions = None
        self._commit_recovered(ledger)
        view, scan = self.reader.read(ledger)
        self.saw_links = scan.links
        now = (self.runtime.clock or utcnow)()
        required = self.runtime.settings.review.required_for(self.agent.agent_id)
        reviewing = ReviewSteps(required) if required > 1 else None
        plan = agentplan.plan_agent(view, self.runtime.settings, now, random_chars, reviewing)
        found = ([*scan.problems, *plan.problems], [*scan.warnings, *plan.warnings])
        self._tell(*found, whole=self.reader.only_items is None, anew=plan.decision_warnings)
        self.report.decision_warnings += plan.decision_warnings
        self.report.problems += [_still_changing(path, at) for path, at in scan.settling]
        if scan.left_waiting:
            waiting = counted(scan.left_waiting, "other decision")
            log.info(
                "%s: %s %s; the daemon records them (or `feedbackd run --once` where no daemon"
                " runs)",
                self.agent.agent_id,
                waiting,
                noun(scan.left_waiting, "waits", "wait"),
            )
        if scan.restored:
            self.apply(agentplan.plan_restore(self.agent, scan.restored))
        self._apply(plan)

    def record(self, entry: FeedbackEntry, author: Person) -> Report:
        """Append one programmatic entry (`feedbackd record`) and commit it, unless present."""
        feedback = self._usable_feedback()
        snippet = current_snippet(self.agent)
        settings = self.runtime.settings
        step = agentplan.plan_record(self.agent, entry, feedback, snippet, settings, author)
        if step is None:
            same = "the same entry is already recorded; nothing changed"
            self._tell([], [same], anew=[same])
            return self.report
        on_disk = [path for path in self.agent.feedback_files if path.exists()]
        uncommitted = uncommitted_files(self.repo, self.agent, self.rel)
        files = agentplan.plan_feedback_files(self.agent, uncommitted, on_disk)
        if files is not None:  # so that a `git revert` of this record leaves the files in place
            self.apply(files)
        self.apply(step)
        return self.report

    def forget(self, entry_id: str, reason: str, author: Person) -> Report:
        """Take one lesson back (`feedbackd forget`): out of feedback.json and the snippet, and
        listed in forgotten.jsonl so that nothing brings it back; its decision stays."""
        feedback = self._usable_feedback()
        entry = find_entry(feedback, entry_id)
        listed = read_forgotten_text(self.agent.forgotten)
        if entry is None:
            hint = f"`feedbackd recent {self.agent.agent_id} --json` lists the entries' ids"
            forgotten = already_forgotten(listed, entry_id)
            if forgotten is not None:  # a second forget: say what the first one did
                raise NotFound(
                    f"{entry_id} was already forgotten{forgotten}",
                    hint="nothing left to do: it is no lesson any more, and its decision stays",
                )
            raise NotFound(f"no entry {entry_id} in {self.rel(self.agent.feedback)}", hint=hint)
        line = forgotten_line(entry, utcnow(), reason, str(author))
        text = (listed if listed.endswith("\n") or not listed else listed + "\n") + line + "\n"
        snippet, settings = current_snippet(self.agent), self.runtime.settings
        forgetting = (text, author)
        self.apply(
            agentplan.plan_forget(
                self.agent, entry, feedback, snippet, settings, forgetting, reason
            )
        )
        return self.report

    def forget_all(self, reason: str, author: Person) -> Report:
        """Wipe the agent's lessons on purpose (`feedbackd forget AGENT --all`): each listed in
        forgotten.jsonl, so that no replayed decision nor merge brings one back."""
        feedback = self._usable_feedback()
        if not feedback:
            raise NotFound(
                f"{self.rel(self.agent.feedback)} holds no lessons; nothing to forget",
                hint=f"`feedbackd recent {self.agent.agent_id}` shows the agent's lessons",
            )
        listed = read_forgotten_text(self.agent.forgotten)
        now, who = utcnow(), str(author)
        lines = "".join(forgotten_line(entry, now, reason, who) + "\n" for entry in feedback)
        text = (listed if listed.endswith("\n") or not listed else listed + "\n") + lines
        snippet, settings = current_snippet(self.agent), self.runtime.settings
        step = agentplan.plan_forget_all(
            self.agent, feedback, snippet, settings, (text, author), reason
        )
        self.apply(step)
        return self.report

    def _usable_feedback(self) -> list[FeedbackEntry]:
        feedback = self.reader.feedback()
        if not isinstance(feedback, list):
            self._tell([BadFile.of(self.agent.feedback, feedback, settles=False)], [])
            raise InvalidFeedback(
                f"{self.rel(self.agent.feedback)} is corrupt; nothing was recorded",
                hint="run `feedbackd doctor` to see the last good version in git",
            )
        return feedback

    # --- applying the plan --------------------------------------------------------------------
    def _apply(self, plan: AgentPlan) -> None:
        for first in (plan.feedback_restore, plan.drafts):
            if first is not None:
                self.apply(first)
        remember_drafts(self.runtime, self.agent, plan.snapshots, self.repo)
        for refusal in plan.refusals:
            self._refuse(refusal)
        lead, done = plan.feedback_files, 0
        while done < len(plan.decisions) and self.keep_going():
            if done:
                time.sleep(RUN_GAP_S)  # the index lock left free between two runs
            done = self._apply_run(plan.decisions, done, lead)
            lead = None
        if lead is not None:
            self.apply(lead)  # no decision went with it (none, or stopping before the first)
        if done == len(plan.decisions) and plan.snippet_refresh is not None:
            self.apply(plan.snippet_refresh)  # stopping leaves it to the next pass

    def _apply_run(self, steps: Sequence[Step], done: int, lead: Step | None) -> int:
        """Apply decisions from `steps[done]` on (after `lead`, a step that goes first), each
        with its commit, holding git's index lock for a short run of them: a big index then
        follows the run's commits once (writing it costs more than a commit). The run ends
        after RUN_S seconds (or RUN_STEPS decisions, where the index waits for the run), or as
        soon as keep_going says no; returns the decisions done by then."""
        started = time.monotonic()
        with self._holding(index_once=True) as index_waits:
            if lead is not None:
                self._check_as_read(lead)
                self._write_and_commit(lead)
            while True:
                self._check_as_read(steps[done])
                self._write_and_commit(steps[done])
                done += 1
                if self.on_decision is not None:
                    self.on_decision(done, len(steps))
                if done == len(steps) or (index_waits and done % RUN_STEPS == 0):
                    return done
                if time.monotonic() - started >= RUN_S or not self.keep_going():
                    return done
                if self.repo is not None and self.repo.users_git.changing_now():
                    return done  # a `git stash -u` must not see a decision half-way

    def apply(self, step: Step) -> None:
        """Write the step's files, append its ledger lines, make its commit (HeadMoved, with
        nothing written, when HEAD is no longer the one the step was planned on)."""
        with self._holding():
            self._check_as_read(step)
            self._write_and_commit(step)

    def _refuse(self, refusal: Refusal) -> None:
        """A review refused: the draft back in review/ as HEAD holds it, `.error` beside it.
        Nothing is committed; the curator's move alone is undone."""
        moved = [a.path for a in refusal.actions if isinstance(a, Remove)]
        for path in moved:
            if path in self.reader.read_as and file_state(path) != self.reader.read_as[path]:
                raise ReadAgain(f"{self.rel(path)} changed since it was read", path)
        commit = CommitRequest("review", self.agent.agent_id, "", (), within=self.agent.root)
        write_change(Change(commit, refusal.actions), atomic_write_text)
        problems.explain(refusal.path, refusal)
        self.report.problems.append(Problem(refusal.path, refusal.message, refusal.hint, True, 0.0))
        log.warning("%s: %s", self.rel(refusal.path), refusal.message)

    def _check_as_read(self, step: Step) -> None:
        for path in step.commit.paths:
            if path in self.reader.read_as and file_state(path) != self.reader.read_as[path]:
                raise ReadAgain(f"{self.rel(path)} changed since it was read", path)

    def _write_and_commit(self, step: Step) -> None:
        # Nothing is written where the agent folder was: moved away, it is not made again.
        for write in step.writes:
            _refuse_a_file_for_a_folder(write.path.parent, self.agent.root)
        with _undone_unless_committed(self.repo, self._held, step, self.agent.decisions):
            self._write_step(step)

    def _write_step(self, step: Step) -> None:
        write_change(step.change(self.agent.decisions), atomic_write_text)
        # No author: feedbackd's act (a draft, a sync), in the workspace's name. The files it
        # decides, checked as read (but those the step itself removes: a review's moved file),
        # and those it names: a `git clean` may yet remove one before the commit.
        gone = set(step.replaced) - {write.path for write in step.writes}
        read = [p for p in step.commit.paths if self.reader.read_as.get(p) is not None]
        needed = [*(p for p in read if p not in gone), *step.commit.needed]
        author = step.commit.author or self.runtime.committer
        self._commit(replace(step.commit, author=author, needed=needed))

    def _commit(self, change: CommitRequest) -> None:
        # The decided files too (and drafts waiting in review/): a pass then sees, without
        # asking git, that they are unchanged.
        decided = [p for p in change.paths if p.parent.name in (*DECISION_FOLDERS, "review")]
        kept = [self.agent.decisions, self.agent.prompt, self.agent.reviews, *decided]
        recorded = self.ledgers.commit(self.runtime, self.repo, change, kept)
        if recorded is not None:
            self.report.events.append(recorded)

    @contextmanager
    def _holding(self, *, index_once: bool = False) -> Iterator[bool]:
        """Git's index lock held, HEAD still the pass's; afterwards HEAD is the step's commit.
        Yields whether the index follows the commits made meanwhile once (a big index)."""
        if self.repo is None:
            yield False
            return
        with self.repo.holding(self.head, index_once=index_once) as held:
            self._held = held
            try:
                yield held.index_once
            finally:
                self._held = None
                self.head = held.head

    # --- recovery -----------------------------------------------------------------------------
    def _commit_recovered(self, ledger: Sequence[DecisionRecord]) -> None:
        """Commit ledger lines that a killed pass wrote but never committed."""
        if self.repo is None or not ledger:
            return
        if self.ledgers.unchanged(self.runtime, self.repo, self.agent.decisions):
            return
        pending = not_in_head(
            self.repo,
            self.runtime.workspace,
            self.agent.decisions,
            ledger,
            head_ids=_ledger_ids,
            id_of=lambda record: record.id,
        )
        if not pending:
            return
        with self._holding():
            event = commit_uncommitted(
                self.runtime,
                self.repo,
                {self.agent.decisions: pending},
                lambda waiting: self._recovered(waiting[self.agent.decisions], ledger),
                ledgers=self.ledgers,
            )
        if event is not None:
            self.report.events.append(event)

    def _recovered(
        self, records: Sequence[DecisionRecord], ledger: Sequence[DecisionRecord]
    ) -> CommitRequest:
        """The commit of decisions whose ledger lines were never committed: the ledger, the
        files it names, and feedback.json and the snippet as they are now; naming the reviewers
        where curators' reviews decided the last one."""
        paths = [self.agent.decisions, self.agent.prompt]
        if self.agent.feedback.exists():  # deleted meanwhile: the pass that follows puts it back
            paths.append(self.agent.feedback)
        if self.agent.reviews.exists():  # the deciding review's line, where reviews decided it
            paths.append(self.agent.reviews)
        for record in records:
            paths.extend(agentplan.decided_file(self.runtime.workspace.root, self.agent, record))
            # Where the draft came from: queue/, or review/ and disputed/ where curators
            # reviewed it (their copy goes with the decision, as in its own commit).
            for folder in ("queue", *REVIEW_FOLDERS):
                paths.extend(self.agent.folder(folder) / (record.item + s) for s in ITEM_SUFFIXES)
        last = records[-1]
        author = _curator_of(last) or choose_author(
            None, self.runtime, self.reader.workspace_user()
        )
        trailers = commitmsg.interrupted_trailers(last.item, last.fields)
        return CommitRequest(
            commitmsg.EVENT_OF_STATE[last.state],
            self.agent.agent_id,
            commitmsg.interrupted_summary([record.item for record in records]),
            paths,
            author,
            item=last.item,
            trailers=[*trailers, *_reviewers(self.reader.reviewing, ledger, last, author)],
            within=self.agent.root,
        )

    # --- telling ------------------------------------------------------------------------------
    def _tell(
        self, bad: Sequence[BadFile], warnings: Sequence[str], whole: bool = False, anew: Lines = ()
    ) -> None:
        """Report what waits and what the pass warns about (`tell`)."""
        tell(self.runtime, self.agent.agent_id, self.report, bad, warnings, whole=whole, anew=anew)

    def rel(self, path: Path) -> str:
        return self.runtime.workspace.relative(path)


def tell(
    runtime: Runtime,
    agent_id: str,
    report: Report,
    bad_files: Sequence[BadFile],
    warnings: Sequence[str],
    *,
    whole: bool = False,
    anew: Collection[str] = (),
) -> None:
    """Report what waits (explained beside each file) and what a pass warns about. The log
    says what is wrong with a file once per change of it (app/workspace/told.py); the warnings
    in `anew` (about what was just done) each time. `whole`: these are all of the agent's
    problems (a pass over its whole folder)."""
    settle_ms = runtime.settings.daemon.settle_ms
    said: list[tuple[str, FileKey]] = []
    errors: set[str] = set()
    for bad in bad_files:
        line = f"{runtime.workspace.relative(bad.path)}: {bad.message}"
        if bad.settles:
            problem = problems.judge(bad.path, bad, settle_ms)
        else:
            problems.explain(bad.path, bad)
            problem = Problem(bad.path, bad.message, bad.hint, True, 0.0)
            line += "; decisions wait"
            errors.add(line)
        if problem.settled:
            said.append((line, file_key(bad.path)))
        report.problems.append(problem)
    report.warnings += warnings
    said += [(warning, None) for warning in warnings if warning not in anew]
    new = runtime.told.news(agent_id, said, whole=whole)
    _log_lines([line for line, _ in said if line not in warnings], warnings, new, anew, errors)


def _log_lines(
    files: Sequence[str],
    warnings: Sequence[str],
    new: Collection[str],
    anew: Collection[str],
    errors: Collection[str],
) -> None:
    """Log what is wrong with files, then the warnings: those `new` (app/workspace/told.py)
    or told `anew` each time; `errors` are what keeps decisions waiting."""
    for line in [*files, *warnings]:
        if line in new or line in anew:
            log.log(logging.ERROR if line in errors else logging.WARNING, "%s", line)


def _still_changing(path: Path, look_again_at: float) -> Problem:
    hint = "feedbackd takes it once it has not changed for daemon.settle_ms"
    return Problem(
        path, "changed a moment ago; waiting for it to settle", hint, False, look_again_at
    )


def forget_entry(runtime: Runtime, agent_id: str, entry_id: str, reason: str) -> Report:
    with open_repo_for_writing(runtime) as repo:
        forgetter = AgentPass(runtime, repo, agent_id, CommittedLedgers())
        author = choose_author(None, runtime, forgetter.reader.workspace_user())
        return forgetter.forget(entry_id, reason, author)


def forget_all_entries(runtime: Runtime, agent_id: str, reason: str) -> Report:
    with open_repo_for_writing(runtime) as repo:
        forgetter = AgentPass(runtime, repo, agent_id, CommittedLedgers())
        author = choose_author(None, runtime, forgetter.reader.workspace_user())
        return forgetter.forget_all(reason, author)


def record_entry(runtime: Runtime, agent_id: str, entry: FeedbackEntry) -> Report:
    with open_repo_for_writing(runtime) as repo:
        recorder = AgentPass(runtime, repo, agent_id, CommittedLedgers())
        author = choose_author(None, runtime, recorder.reader.workspace_user())
        return recorder.record(entry, author)


def _ledger_ids(text: str) -> list[str]:
    return [record.id for record in decisions.parse_ledger(text)]


def _reviewers(
    reading: ReviewReading | None,
    ledger: Sequence[DecisionRecord],
    record: DecisionRecord,
    author: Person,
) -> list[tuple[str, str]]:
    """The trailers naming the curators whose reviews made the decision `record`."""
    if reading is None:
        return []
    reviews = reading.read(()).records
    if isinstance(reviews, FeedbackdError):
        return []
    required = reading.runtime.settings.review.required_for(reading.agent.agent_id)
    return ReviewSteps(required).decided_trailers(ledger, reviews, record, author)


def _curator_of(record: DecisionRecord) -> Person | None:
    try:
        return Person.parse(record.curator) if record.curator else None
    except ValueError:
        return None  # a hand-edited ledger line: the workspace's identity stands in


@contextmanager
def _undone_unless_committed(
    repo: GitRepo | None, held: HeldIndexLock | None, step: Step, ledger: Path
) -> Iterator[None]:
    """Around a step's writes and commit: when the commit is not made (a full disk), what the
    step wrote is taken back, so that a command that fails leaves nothing of its decision, and
    the next pass plans the step afresh (a decision then gets its ordinary commit)."""
    planned_on = held.head if held is not None else None
    appended = [ledger] * bool(step.ledger) + step.appended
    with Undo(step.replaced, appended) as undo:
        try:
            yield
        except Exception:
            if _not_committed(repo, held, planned_on) and not undo.undo():
                log.warning("what a step wrote before its commit failed is left to the next pass")
            raise


def _not_committed(
    repo: GitRepo | None, held: HeldIndexLock | None, planned_on: str | None
) -> bool:
    """Whether HEAD is still the commit the step was planned on, so its commit was not made (a
    commit that moved HEAD and failed after it is kept, as a crash would leave it)."""
    if repo is None or held is None or held.head != planned_on:
        return repo is None
    try:
        return repo.head() == planned_on
    except (FeedbackdError, OSError):
        return False


def _refuse_a_file_for_a_folder(folder: Path, root: Path) -> None:
    """NotADirectoryError before any of a step's files is written when a file stands where one
    of its folders must be (a `prompt` file where prompt/ goes): a step half-written would leave
    its first files behind, and the next pass would take them for an earlier decision's."""
    while folder != root and root in folder.parents:
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(folder))
        folder = folder.parent

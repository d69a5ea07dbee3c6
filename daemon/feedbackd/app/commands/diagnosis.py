"""`feedbackd doctor`: read every file feedbackd depends on; say what is wrong and how to fix it."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

from feedbackd.app.commits.locking import INDEX_LAGS, index_lags
from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.curation import webhousequeue
from feedbackd.app.curation.agentread import AgentReader, deleted_feedback
from feedbackd.app.workspace.agentfiles import (
    read_feedback,
    read_item,
    read_ledger,
)
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation.agentplan import ItemFile, to_decide
from feedbackd.core.curation.decisions import parse_record
from feedbackd.core.curation.feedback import parse_feedback
from feedbackd.core.errors import FeedbackdError, PathProblem, RepositoryDamaged
from feedbackd.core.ids import ID_RULE, is_valid_id, shown_name, shown_path
from feedbackd.core.ratings.memory import MemoryRecord
from feedbackd.core.ratings.records import parse_rating_file, stored_fields
from feedbackd.core.ratings.soul import parse_soul
from feedbackd.core.reviews.reviewlog import parse_review
from feedbackd.core.wording import Progress
from feedbackd.core.workspacepaths import (
    ALL_ITEM_FOLDERS,
    DECISION_FOLDERS,
    ITEM_SUFFIXES,
    AgentPaths,
    other_format,
)
from feedbackd.edges.clock import utcnow
from feedbackd.edges.files import agent_ids, read_file_bytes
from feedbackd.edges.git.repo import GitRepo, damage_in


def examine(runtime: Runtime, progress: Progress | None = None) -> tuple[int, list[PathProblem]]:
    """How many files were checked, and the problems found (each path relative to the
    workspace, as a user names it)."""
    workspace = runtime.workspace
    checked, findings = 0, []
    if not workspace.agents_dir.is_dir():
        hint = "run `feedbackd init` in the workspace"
        return 0, [PathProblem(workspace.agents_dir, "missing agents folder", hint)]
    if runtime.git_enabled and not GitRepo.is_repo(workspace.root):
        hint = "run `feedbackd init` there, or set git.enabled: false"
        findings.append(PathProblem(Path("."), "the workspace is not a git repository", hint))
    for entry in sorted(workspace.agents_dir.iterdir()):
        if entry.is_dir() and not is_valid_id(entry.name):
            message = f"folder name {shown_name(entry.name)} is not a valid agent id"
            hint = f"rename the folder: an agent id has {ID_RULE}"
            findings.append(PathProblem(Path(workspace.relative(entry)), message, hint))
    checks = [c for a in agent_ids(workspace) for c in _checks(runtime, workspace.agent(a))]
    if runtime.git_enabled and GitRepo.is_repo(workspace.root):
        checks.append((workspace.root / ".git", _repository_whole(runtime)))
        checks.append((workspace.root / ".git" / "index", _index_behind(runtime)))
    checks += inbox_checks(runtime)
    checks += webhousequeue.doctor_checks(runtime)
    for path, check in checks:
        checked += 1
        problem = _run_check(check)
        if problem is not None:
            findings.append(PathProblem(Path(workspace.relative(path)), *problem))
        if progress is not None:
            progress(checked, len(checks))
    return checked, findings


def _checks(runtime: Runtime, agent: AgentPaths) -> Iterator[tuple[Path, Callable[[], None]]]:
    for folder in (*ALL_ITEM_FOLDERS, "prompt", "ratings", "memory"):
        directory = agent.folder(folder)
        if directory.exists() and not directory.is_dir():
            yield directory, _not_a_folder(directory)
        if folder not in ALL_ITEM_FOLDERS or not directory.is_dir():
            continue
        for path in _items_in(directory):
            yield path, _item_check(path)
        for path, (message, hint) in _others_in(directory, folder):
            yield path, _refused(message, hint)
    yield from _decided_twice(agent)
    if runtime.git_enabled:
        yield agent.decisions, _ledger_lines_lost(runtime, agent)
    yield from _feedback_checks(runtime, agent)
    if agent.soul.exists():
        yield agent.soul, _soul_check(agent.soul)
    logs = [agent.decisions, agent.reviews, *sorted(agent.memory.glob("*.jsonl"))]
    logs += sorted(agent.ratings.glob("*/*.jsonl"))
    for path in logs:
        if path.is_file():
            yield path, _lines_check(path, _line_checker(agent, path))


def _feedback_checks(
    runtime: Runtime, agent: AgentPaths
) -> Iterator[tuple[Path, Callable[[], None]]]:
    if agent.feedback.exists():
        yield agent.feedback, _feedback_check(runtime, agent)
    elif runtime.git_enabled:
        yield agent.feedback, _feedback_deleted(runtime, agent)


def _decided_twice(agent: AgentPaths) -> Iterator[tuple[Path, Callable[[], None]]]:
    """An item in both approved/ and rejected/ waits undecided until the curator keeps one;
    a draft in queue/ beside its decision goes (agentplan.beside_decisions)."""
    decided = {f: {p.stem for p in _items_in(agent.folder(f))} for f in DECISION_FOLDERS}
    for path in _items_in(agent.rejected):
        if path.stem in decided["approved"]:
            yield path, _in_both_folders(path.stem)
    for path in _items_in(agent.queue):
        where = [f for f in DECISION_FOLDERS if path.stem in decided[f]]
        if where:
            yield path, _draft_beside_decision(path.name, where[0])


def _draft_beside_decision(name: str, folder: str) -> Callable[[], None]:
    shown = shown_path(name)

    def check() -> None:
        raise FeedbackdError(
            f"{shown} is in both queue/ and {folder}/ (a `git reset` or checkout put the draft"
            " back): the decision stands",
            hint=f"the daemon (or `feedbackd run --once`) removes queue/{shown} and commits"
            f" that; to decide it again instead, move {folder}/{shown} back to queue/ over it",
        )

    return check


def _ledger_lines_lost(runtime: Runtime, agent: AgentPaths) -> Callable[[], None]:
    """Decided files with no line in decisions.jsonl whose decision commit git holds: the
    ledger was deleted or damaged. The next pass restores those lines from history (it never
    decides them again); doctor says so before that pass commits anything."""

    def check() -> None:
        files = [
            ItemFile(folder, path.stem, path)
            for folder in DECISION_FOLDERS
            for path in _items_in(agent.folder(folder))
        ]
        undecided = to_decide(files, read_ledger(agent.decisions))
        with open_repo(runtime) as repo:
            reader = AgentReader(runtime, repo, agent)
            found = reader.decisions_in_history(undecided)
            lost = [f.item_id for f, record in zip(undecided, found, strict=True) if record]
        if lost:
            raise _lost_lines_error(runtime, agent, lost)

    return check


def _lost_lines_error(runtime: Runtime, agent: AgentPaths, lost: list[str]) -> FeedbackdError:
    ledger = runtime.workspace.relative(agent.decisions)
    shown = ", ".join(lost[:10]) + (f" and {len(lost) - 10} more" if len(lost) > 10 else "")
    count = f"{len(lost)} decision{'s' if len(lost) > 1 else ''}"
    return FeedbackdError(
        f"{count} that git holds {'have' if len(lost) > 1 else 'has'} no line in"
        f" decisions.jsonl ({'missing' if not agent.decisions.exists() else 'damaged'}): {shown}",
        hint="the daemon (or `feedbackd run --once`) puts the lines back from their decision"
        " commits, without deciding anything again; or take the committed ledger back with"
        f" `git checkout HEAD -- {ledger}`",
    )


def _repository_whole(runtime: Runtime) -> Callable[[], None]:
    """Objects the refs, index or reflogs reach that git lacks or cannot read: feedbackd
    records nothing on such a history (docs/git.md, 'A damaged repository')."""

    def check() -> None:
        damage = damage_in(runtime.workspace.root)
        if damage is not None:
            raise RepositoryDamaged(f"git fsck finds the repository damaged: {damage}")

    return check


def _index_behind(runtime: Runtime) -> Callable[[], None]:
    """Index entries that still show feedbackd's commits undone: an index update failed (a
    full disk) and no heal has succeeded since, or an earlier version lost the mark that has
    the next writer heal it. The user's next `git commit` would undo those decisions."""

    def check() -> None:
        with open_repo(runtime) as repo:
            behind = repo.heal_index(dry_run=True) if repo is not None else []
        if not behind:
            return
        shown = ", ".join(behind[:5]) + (f" and {len(behind) - 5} more" if len(behind) > 5 else "")
        paths = "path" if len(behind) == 1 else f"{len(behind)} paths"
        command = f"`git reset -q HEAD -- {shlex.join(behind)}`"
        healed = (
            "the daemon heals it by itself once git can write the index (free some space if"
            " the disk is full), or run `feedbackd run --once`; or by hand: "
            if index_lags(runtime)
            else "bring those entries in line with HEAD: "
        )
        raise FeedbackdError(
            f"{INDEX_LAGS} for {paths}, so a `git commit` now would undo them: {shown}",
            hint=healed + command,
        )

    return check


def _items_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in ITEM_SUFFIXES and p.name[0] != ".")


def _others_in(folder: Path, name: str) -> list[tuple[Path, tuple[str, str]]]:
    """The plain files of an item folder that are of another format (a draft saved as .txt),
    each with what is wrong with it and how to fix it, as the daemon explains them."""
    found = []
    for path in sorted(folder.iterdir()):
        wrong = other_format(path.name, name)
        if wrong is not None and path.is_file() and not path.is_symlink():
            found.append((path, wrong))
    return found


def _refused(message: str, hint: str) -> Callable[[], None]:
    def check() -> None:
        raise FeedbackdError(message, hint=hint)

    return check


def _in_both_folders(item_id: str) -> Callable[[], None]:
    shown = shown_path(item_id)

    def check() -> None:
        raise FeedbackdError(
            f"{shown} is in both approved/ and rejected/; it is not decided until one goes",
            hint=f"keep one: remove {shown} from the folder that is wrong",
        )

    return check


def inbox_checks(runtime: Runtime) -> Iterator[tuple[Path, Callable[[], None]]]:
    folder = runtime.workspace.inbox_ratings
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        yield path, _inbox_check(runtime, path)


def _soul_check(path: Path) -> Callable[[], None]:
    def check() -> None:
        parse_soul(read_file_bytes(path).decode("utf-8"))

    return check


def _line_checker(agent: AgentPaths, path: Path) -> Callable[[str], object]:
    if path == agent.decisions:
        return parse_record
    if path == agent.reviews:
        return parse_review
    if path.parent == agent.memory:
        return MemoryRecord.model_validate_json
    return stored_fields


def _lines_check(path: Path, validate: Callable[[str], object]) -> Callable[[], None]:
    """Each line of an append-only log must read; the first bad one is reported."""

    def check() -> None:
        text = read_file_bytes(path).decode("utf-8")
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                validate(line)
            except (ValueError, FeedbackdError) as error:
                reason = str(error).splitlines()[0]
                raise FeedbackdError(
                    f"line {number} cannot be read: {reason}",
                    hint="repair or remove that line (git log -p shows how it was written)",
                ) from None

    return check


def _inbox_check(runtime: Runtime, path: Path) -> Callable[[], None]:
    def check() -> None:
        text = read_file_bytes(path).decode("utf-8")
        parse_rating_file(text, requester=runtime.settings.agent_id, now=utcnow())

    return check


def _not_a_folder(path: Path) -> Callable[[], None]:
    def check() -> None:
        raise FeedbackdError(
            f"{path.name} is a file where feedbackd needs a folder",
            hint="move the file away; feedbackd creates the folder when it needs it",
        )

    return check


def _item_check(path: Path) -> Callable[[], None]:
    def check() -> None:
        if not is_valid_id(path.stem):
            raise FeedbackdError(
                f"file name {shown_name(path.stem)} is not a valid item id",
                hint=f"rename it: an item id has {ID_RULE}",
            )
        read_item(path)

    return check


def _feedback_check(runtime: Runtime, agent: AgentPaths) -> Callable[[], None]:
    def check() -> None:
        try:
            read_feedback(agent.feedback)
        except FeedbackdError as error:
            good = last_good_feedback(runtime, agent)
            hint = (
                f"restore the last good version: git checkout {good} -- "
                f"{runtime.workspace.relative(agent.feedback)}"
                if good
                else "no good version in git; repair it by hand"
            )
            raise FeedbackdError(error.message, hint=hint) from None

    return check


def _feedback_deleted(runtime: Runtime, agent: AgentPaths) -> Callable[[], None]:
    """feedback.json gone while HEAD holds it: the next pass puts it back (a deletion is not
    how lessons are wiped); doctor says so before that pass."""

    def check() -> None:
        with open_repo(runtime) as repo:
            held = deleted_feedback(repo, agent, runtime.workspace.relative)
        if held is None:
            return  # never committed, or the deletion was: the lessons were wiped on purpose
        path = runtime.workspace.relative(agent.feedback)
        raise FeedbackdError(
            "feedback.json was deleted, but the last commit holds it: the daemon (or"
            " `feedbackd run --once`) puts it back with every lesson",
            hint=f"take it back now with `git checkout HEAD -- {path}`; to wipe the agent's"
            f" lessons on purpose, run `feedbackd forget {agent.agent_id} --all`",
        )

    return check


def last_good_feedback(runtime: Runtime, agent: AgentPaths) -> str | None:
    """The newest commit whose feedback.json of this agent parses."""
    path = runtime.workspace.relative(agent.feedback)
    with open_repo(runtime) as repo:
        if repo is None:
            return None
        for commit in repo.commits_touching(path, limit=50):
            data = repo.file_at(commit, path)
            try:
                parse_feedback((data or b"").decode("utf-8"))
            except (FeedbackdError, UnicodeDecodeError):
                continue
            return commit[:12]
    return None


def _run_check(check: Callable[[], None]) -> tuple[str, str] | None:
    try:
        check()
    except FeedbackdError as error:
        return error.message, error.hint
    except UnicodeDecodeError as error:
        return f"not UTF-8 (byte {error.start})", "save it as UTF-8"
    except OSError as error:
        return f"cannot be read: {error.strerror}", "check its permissions"
    return None

"""`feedbackd export AGENT --format F [--at REV|DATE] [--out PATH]` and its HTTP route: an
agent's decided items as training and evaluation data, from the history as one commit held it.

open_export checks everything a user can get wrong (the format, the agent, --at) before a byte
is written, so that a refusal is a clean error and never half an output; Export.text then
streams the rows (core/curation/exports.py builds them, loop/curation/exportreader.py reads
them), and write_export puts them on a stream, in a file or, for `hf`, in a dataset folder.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from feedbackd.core.curation import exports
from feedbackd.core.curation.exports import ExportRow, Tally
from feedbackd.core.errors import NotFound, UsageError, WorkspaceError
from feedbackd.core.wording import closest
from feedbackd.edges.files import agent_ids, atomic_write_chunks, atomic_write_text
from feedbackd.edges.git.repo import GitRepo
from feedbackd.loop.commands.queries import commit_by
from feedbackd.loop.commits.repo import open_repo
from feedbackd.loop.curation.exportreader import export_rows, folder_at, read_standing
from feedbackd.loop.workspace.itemfiles import refuse_outside_agent
from feedbackd.loop.workspace.runtime import Runtime

_SHOWN_AGENTS = 20  # an unknown agent's error lists this many of the known ones


@dataclass(frozen=True)
class Export:
    """One export, checked: the agent's folder at `commit` (None for either: nothing to
    export, as before the agent existed)."""

    runtime: Runtime
    agent: str
    format: str
    commit: str | None
    folder: str | None

    def rows(self) -> Iterator[ExportRow]:
        """The rows, by decision time then item id, read as they are needed."""
        if self.commit is None or self.folder is None:
            return
        with open_repo(self.runtime) as repo:
            if repo is None:  # git was switched off since open_export
                return
            standing = read_standing(repo, self.agent, self.commit, self.folder)
            template = self.runtime.settings.export.input_template
            yield from export_rows(repo, standing, template)

    def text(self, tally: Tally | None = None) -> Iterator[str]:
        """The format's text, a piece at a time (counted into `tally` as it goes)."""
        rows = self.rows() if tally is None else (tally.add(row) for row in self.rows())
        return exports.export_text(self.format, rows)


def open_export(
    runtime: Runtime, agent_id: str, export_format: str | None, at: str | None
) -> Export:
    """The export asked for, once the format, the agent and --at are known to be good."""
    chosen = exports.check_format(export_format)
    refuse_outside_agent(runtime, agent_id)  # a link out of the workspace is no agent
    with open_repo(runtime) as repo:
        if repo is None:
            raise WorkspaceError(
                "export reads the git history, and git is switched off here",
                hint="set git.enabled: true in feedbackd.yaml",
            )
        commit = _commit_at(repo, at)
        folder = folder_at(repo, runtime.workspace, agent_id, commit) if commit else None
        if folder is None:
            _refuse_unknown(runtime, repo, agent_id)
    return Export(runtime, agent_id, chosen, commit, folder)


def _commit_at(repo: GitRepo, at: str | None) -> str | None:
    """The commit `at` names (a revision, or the last commit made by a date), HEAD without it;
    None when there is none (no commit yet, or none by that date: an empty export)."""
    return repo.head() if at is None else commit_by(repo, at)


def _refuse_unknown(runtime: Runtime, repo: GitRepo, agent_id: str) -> None:
    """NotFound, listing the agents there are, unless the agent exists now (on disk or at
    HEAD): then it had no folder yet at the commit asked for, and the export is empty."""
    workspace = runtime.workspace
    agents = workspace.relative(workspace.agents_dir)
    committed = repo.listings.folders_at_head(agents)
    if agent_id in committed or workspace.agent(agent_id).root.is_dir():
        return
    known = sorted(set(committed) | set(agent_ids(workspace)))
    close = closest(agent_id, known)
    listed = ", ".join(known[:_SHOWN_AGENTS]) + (", …" if len(known) > _SHOWN_AGENTS else "")
    hint = f"the agents are: {listed}" if known else f"no agent has a folder in {agents}/ yet"
    guess = f": did you mean {close}?" if close else ""
    raise NotFound(f"no agent {agent_id} in {agents}/{guess}", hint=hint)


@dataclass(frozen=True)
class Written:
    """What write_export wrote: the rows counted, and the lines of the format."""

    tally: Tally
    lines: int


def write_export(export: Export, out: Path | None, stream: BinaryIO) -> Written:
    """The export on `stream`, or in the file `out` (replaced in one step once whole); `hf`: the
    dataset folder `out`, with its data file (data/train-HASH.jsonl) and README.md."""
    tally = Tally()
    if export.format == "hf":
        if out is None:
            raise UsageError(
                "--format hf writes a dataset folder: say where with --out",
                hint=f"e.g. feedbackd export {export.agent} --format hf --out {export.agent}-data",
            )
        _write_dataset(export, out, tally)
    elif out is None:
        for piece in export.text(tally):
            stream.write(piece.encode("utf-8"))
        stream.flush()
    else:
        _refuse_folder(out)
        atomic_write_chunks(out, (piece.encode("utf-8") for piece in export.text(tally)))
    return Written(tally, _lines(export.format, tally))


def _write_dataset(export: Export, out: Path, tally: Tally) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(
            f"--out {out} is a file, and --format hf writes a folder",
            hint="name a new folder (or an earlier hf export, which is replaced)",
        )
    folder = out / exports.HF_DATA_FOLDER
    staged = folder / ".train.jsonl"
    _refuse_folder(staged)
    digest = hashlib.sha256()
    atomic_write_chunks(staged, _hashed(export.text(tally), digest.update))
    name = exports.hf_data_file(digest.hexdigest())
    _refuse_folder(out / name)
    os.replace(staged, out / name)
    atomic_write_text(
        out / "README.md", exports.dataset_card(export.agent, export.commit, tally, name)
    )
    # The card names the new file alone; an earlier export's data is no longer part of it.
    for earlier in folder.glob("train*.jsonl"):
        if earlier != out / name and earlier.is_file():
            earlier.unlink()


def _hashed(pieces: Iterable[str], update: Callable[[bytes], object]) -> Iterator[bytes]:
    for piece in pieces:
        data = piece.encode("utf-8")
        update(data)
        yield data


def _refuse_folder(path: Path) -> None:
    if path.is_dir():
        raise UsageError(f"--out {path} is a folder", hint="name the file to write, e.g. out.jsonl")


def _lines(export_format: str, tally: Tally) -> int:
    """The rows the format took: sft an approved item each, dpo a corrected one each."""
    if export_format == "openai-sft":
        return tally.approved
    if export_format == "openai-dpo":
        return tally.corrected
    return tally.decided

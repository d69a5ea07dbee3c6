"""`feedbackd export AGENT --format F [--at REV|DATE] [--out PATH]` and its HTTP route: an
agent's decided items as training and evaluation data, from the history as one commit held it.

open_export checks everything a user can get wrong (the format, the agent, --at) before a byte
is written, so that a refusal is a clean error and never half an output; Export.text then
streams the rows (core/curation/exportrows.py builds them, app/curation/exportread.py reads
them), and write_export puts them on a stream, in a file or, for `hf`, in a dataset folder.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from feedbackd.app.commands.queries import commit_by
from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.curation.exportread import (
    SOUL,
    export_rows,
    folder_at,
    read_standing,
    soul_at,
)
from feedbackd.app.workspace.itemfiles import refuse_outside_agent
from feedbackd.app.workspace.runtime import Runtime
from feedbackd.core.curation import exportrows
from feedbackd.core.curation.exportrows import ExportRow
from feedbackd.core.curation.exportsplits import (
    TRAIN,
    VALIDATION,
    ExportOptions,
    Kept,
    deduplicated,
    split_records,
)
from feedbackd.core.curation.learningcurve import Tally
from feedbackd.core.errors import NotFound, UsageError, WorkspaceError
from feedbackd.core.wording import closest
from feedbackd.edges.files import agent_ids, atomic_write_chunks, atomic_write_text
from feedbackd.edges.git.repo import GitRepo

_SHOWN_AGENTS = 20  # an unknown agent's error lists this many of the known ones
PLAIN = ExportOptions()  # every row, in one file, as the format takes it


@dataclass(frozen=True)
class Export:
    """One export, checked: the agent's folder at `commit` (None for either: nothing to
    export, as before the agent existed), and the system message of its conversations."""

    runtime: Runtime
    agent: str
    format: str
    commit: str | None
    folder: str | None
    options: ExportOptions = PLAIN
    system: str | None = None

    def rows(self) -> Iterator[ExportRow]:
        """The rows, by decision time then item id, read as they are needed."""
        if self.commit is None or self.folder is None:
            return
        with open_repo(self.runtime) as repo:
            if repo is None:  # git was switched off since open_export
                return
            standing = read_standing(repo, self.agent, self.commit, self.folder)
            template = self.runtime.settings.export.input_template
            yield from export_rows(repo, standing, template, self.options.with_snippet)

    def records(self, counts: Counts) -> Iterator[Kept]:
        """The format's records, each with its item and INPUT, counted into `counts`."""
        shape = exportrows.RECORDS[self.format]
        keep_rejections = self.format != "dspy" or self.options.include_rejections
        for row in self.rows():
            exportrows.count_row(counts.tally, row)
            if row.decision == "rejected" and not keep_rejections:
                counts.left_out += 1
                continue
            value = shape(row, self.system)
            if value is not None:
                yield row.item, row.input, value

    def parts(self, counts: Counts) -> dict[str, Iterable[dict[str, Any]]]:
        """The records of each split (`train` alone without --split), deduplicated with
        --dedup; streamed as they are read unless one of them needs them all."""
        options = self.options
        if not options.dedup and options.split is None:
            return {TRAIN: (value for _, _, value in self.records(counts))}
        kept = list(self.records(counts))
        if options.dedup:
            kept, counts.dropped = deduplicated(kept)
        split = split_records(kept, options.split) if options.split else {TRAIN: kept}
        return {name: [value for _, _, value in part] for name, part in split.items()}

    def text(self, counts: Counts | None = None) -> Iterator[str]:
        """The format's text, a piece at a time (train's, for a split)."""
        return exportrows.export_text(self.format, self.parts(counts or Counts())[TRAIN])


@dataclass
class Counts:
    """What an export wrote: the rows read, the lines of each split, the duplicates dropped
    and the rejections a dspy export left out."""

    tally: Tally = field(default_factory=Tally)
    lines: dict[str, int] = field(default_factory=dict)
    dropped: int = 0
    left_out: int = 0


def open_export(
    runtime: Runtime,
    agent_id: str,
    export_format: str | None,
    at: str | None,
    options: ExportOptions = PLAIN,
) -> Export:
    """The export asked for, once the format, the agent, --at and export.system are known to
    be good."""
    chosen = exportrows.check_format(export_format)
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
        system = runtime.settings.export.system
        if system == SOUL and commit and folder:
            system = soul_at(repo, commit, folder)
    return Export(runtime, agent_id, chosen, commit, folder, options, system)


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


def write_export(export: Export, out: Path | None, stream: BinaryIO) -> Counts:
    """The export on `stream`, or in the file `out` (replaced in one step once whole; a split's
    validation beside it, as NAME.validation.EXT); `hf`: the dataset folder `out`, with a data
    file per split (data/train-HASH.jsonl) and README.md."""
    counts = Counts()
    if export.format == "hf":
        if out is None:
            raise UsageError(
                "--format hf writes a dataset folder: say where with --out",
                hint=f"e.g. feedbackd export {export.agent} --format hf --out {export.agent}-data",
            )
        _write_dataset(export, out, counts)
    elif out is None:
        if export.options.split is not None:
            raise UsageError(
                "--split writes two files (train, and validation beside it): say where with --out",
                hint=f"e.g. feedbackd export {export.agent} --format {export.format}"
                " --split time:0.9 --out train.jsonl",
            )
        for piece in _counted(export.format, export.parts(counts)[TRAIN], counts, TRAIN):
            stream.write(piece.encode("utf-8"))
        stream.flush()
    else:
        _write_files(export, out, counts)
    return counts


def _counted(
    export_format: str, records: Iterable[dict[str, Any]], counts: Counts, split: str
) -> Iterator[str]:
    """The format's text of `records`, counting its lines into `counts`."""
    counts.lines[split] = 0

    def each() -> Iterator[dict[str, Any]]:
        for value in records:
            counts.lines[split] += 1
            yield value

    return exportrows.export_text(export_format, each())


def validation_file(out: Path) -> Path:
    """Where a split's validation goes beside `out`: train.jsonl → train.validation.jsonl."""
    return out.with_name(f"{out.stem}.validation{out.suffix or '.jsonl'}")


def _write_files(export: Export, out: Path, counts: Counts) -> None:
    parts = export.parts(counts)
    targets = {TRAIN: out, VALIDATION: validation_file(out)}
    for name in parts:
        _refuse_folder(targets[name])
    for name, records in parts.items():
        text = _counted(export.format, records, counts, name)
        atomic_write_chunks(targets[name], (piece.encode("utf-8") for piece in text))


def _write_dataset(export: Export, out: Path, counts: Counts) -> None:
    if out.exists() and not out.is_dir():
        raise UsageError(
            f"--out {out} is a file, and --format hf writes a folder",
            hint="name a new folder (or an earlier hf export, which is replaced)",
        )
    folder = out / exportrows.HF_DATA_FOLDER
    written: dict[str, str] = {}
    for split, records in export.parts(counts).items():
        staged = folder / f".{split}.jsonl"
        _refuse_folder(staged)
        digest = hashlib.sha256()
        text = _counted(export.format, records, counts, split)
        atomic_write_chunks(staged, _hashed(text, digest.update))
        written[split] = exportrows.hf_data_file(digest.hexdigest(), split)
        _refuse_folder(out / written[split])
        os.replace(staged, out / written[split])
    data = exportrows.DataFiles(written, counts.lines, counts.dropped)
    card = exportrows.dataset_card(export.agent, export.commit, counts.tally, data)
    atomic_write_text(out / "README.md", card)
    # The card names the new files alone; an earlier export's data is no longer part of it.
    current = {out / name for name in written.values()}
    for earlier in [*folder.glob("train*.jsonl"), *folder.glob("validation*.jsonl")]:
        if earlier not in current and earlier.is_file():
            earlier.unlink()


def _hashed(pieces: Iterable[str], update: Callable[[bytes], object]) -> Iterator[bytes]:
    for piece in pieces:
        data = piece.encode("utf-8")
        update(data)
        yield data


def _refuse_folder(path: Path) -> None:
    if path.is_dir():
        raise UsageError(f"--out {path} is a folder", hint="name the file to write, e.g. out.jsonl")

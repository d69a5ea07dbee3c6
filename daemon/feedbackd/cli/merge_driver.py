"""`feedbackd merge-driver BASE OURS THEIRS [PATH]`, the command git runs once for every merged
feedback file (`python -m feedbackd.cli.merge_driver`, registered by `init` and by sync).

git starts one process per file, so a merge of many files stays quick only if each starts
quickly: the driver imports the merge on plain JSON values and reads the cap alone from
feedbackd.yaml (core/feedbackcap.py). The settings model, pydantic with it, is imported
only when the file says something that the quick reading cannot vouch for.
"""

from __future__ import annotations

import sys
from pathlib import Path

from feedbackd.app.workspace.configfile import config_path, read_config
from feedbackd.core.curation.merging import FileKind, kind_of, merge_bytes
from feedbackd.core.errors import FeedbackdError, MergeRefused
from feedbackd.core.feedbackcap import DEFAULT_MAX_ENTRIES, written_max_entries
from feedbackd.edges.files import atomic_write_bytes, read_file_bytes


def run_merge_driver(
    base: Path, ours: Path, theirs: Path, path: str | None, cap: int | None
) -> None:
    """Merge the three versions git hands over and write the result into `ours`.

    Raises MergeRefused (git then records a conflict and keeps `ours` as it was).
    """
    kind = _kind_for(path, ours)
    base_bytes, ours_bytes = _read(base, "base"), _read(ours, "ours")
    theirs_bytes = _read(theirs, "theirs")
    limit = cap if cap is not None else configured_cap()
    merged = merge_bytes(kind, base_bytes, ours_bytes, theirs_bytes, limit)
    if merged != ours_bytes:
        atomic_write_bytes(ours, merged)


def _kind_for(path: str | None, ours: Path) -> FileKind:
    kind = kind_of(path) if path else kind_of(ours.name)
    if kind is None:
        raise MergeRefused(
            f"{path or ours.name}: no feedbackd merge for this kind of file",
            hint="only feedback.json, *.jsonl and generated prompt snippets are merged;"
            " check the merge=feedbackd lines in .gitattributes",
        )
    return kind


def _read(file: Path, side: str) -> bytes:
    try:
        return read_file_bytes(file)
    except OSError as error:
        raise MergeRefused(
            f"{side}: cannot read {file}: {error.strerror or error}",
            hint="git passes the three versions as %O %A %B; check the merge driver command",
        ) from None


def configured_cap() -> int:
    """feedback.max_entries of the workspace git runs the driver in (its top folder)."""
    try:
        path = config_path(None, Path.cwd())
        if path is None:
            return DEFAULT_MAX_ENTRIES
        text = read_config(path)
        cap = written_max_entries(text)
        return cap if cap is not None else validated_max_entries(text, path)
    except FeedbackdError as error:
        sys.stderr.write(
            f"feedbackd merge-driver: {error.message}; merging with the default cap of "
            f"{DEFAULT_MAX_ENTRIES}\n"
        )
        return DEFAULT_MAX_ENTRIES


def validated_max_entries(text: str, path: Path) -> int:
    """The cap as the full settings read it; ConfigError saying what is wrong with the file."""
    from feedbackd.core.config import parse_settings  # pydantic: only for an unusual file

    return parse_settings(text, str(path)).feedback.max_entries


def report_refusal(path: str | None, error: FeedbackdError) -> None:
    """Tell the person running git why this file was left as a conflict."""
    where = f"{path}: " if path else ""
    hint = f" ({error.hint})" if error.hint else ""
    sys.stderr.write(f"feedbackd merge-driver: {where}{error.message}{hint}\n")


USAGE = "usage: feedbackd merge-driver [--cap N] BASE OURS THEIRS [PATH]\n"


def main(argv: list[str] | None = None) -> int:
    """`feedbackd merge-driver [--cap N] BASE OURS THEIRS [PATH]`; exit 0 merged, 1 left as a
    conflict, 2 bad usage."""
    parsed = _parse_arguments(list(sys.argv[1:] if argv is None else argv))
    if parsed is None:
        sys.stderr.write(USAGE)
        return 2
    files, cap = parsed
    path = files[3] if len(files) == 4 else None
    try:
        run_merge_driver(Path(files[0]), Path(files[1]), Path(files[2]), path, cap)
    except FeedbackdError as error:
        report_refusal(path, error)
        return 1
    return 0


def _parse_arguments(args: list[str]) -> tuple[list[str], int | None] | None:
    """The three or four file arguments and the --cap (anywhere, `--cap N` or `--cap=N`)."""
    files: list[str] = []
    cap: int | None = None
    rest = iter(args)
    for arg in rest:
        if arg == "--cap" or arg.startswith("--cap="):
            value = arg.partition("=")[2] if "=" in arg else next(rest, "")
            if not value.isdigit() or int(value) < 1:
                return None
            cap = int(value)
        else:
            files.append(arg)
    return (files, cap) if len(files) in (3, 4) else None


if __name__ == "__main__":
    raise SystemExit(main())

"""Files parsed once while they hold the same bytes: real files, changed as users and writers
change them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from feedbackd.edges.files import FileState, atomic_write_text
from feedbackd.edges.parsedfiles import ParsedFiles


class Counting:
    """A parser that counts its calls: parsing again is what the cache is there to spare."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, data: bytes) -> list[str]:
        self.calls += 1
        return json.loads(data)


def test_an_unchanged_file_is_parsed_once(tmp_path: Path) -> None:
    path = tmp_path / "feedback.json"
    path.write_text('["a"]')
    files: ParsedFiles[list[str]] = ParsedFiles(keep=4, max_bytes=1000)
    parse = Counting()
    assert files.read(path, parse) == ["a"] and files.read(path, parse) == ["a"]
    assert parse.calls == 1


def test_every_kind_of_change_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "feedback.json"
    path.write_text('["a"]')
    files: ParsedFiles[list[str]] = ParsedFiles(keep=4, max_bytes=1000)
    parse = Counting()
    files.read(path, parse)
    with path.open("a") as handle:  # an append: another size
        handle.write(" ")
    assert files.read(path, parse) == ["a"] and parse.calls == 2
    atomic_write_text(path, '["b"] ')  # a rewrite of the same size: another inode
    assert files.read(path, parse) == ["b"]
    path.write_text('["c"] ')  # an edit in place, same size
    assert files.read(path, parse) == ["c"] and parse.calls == 4


def test_other_bytes_are_read_again_even_with_the_same_inode_size_and_times(
    tmp_path: Path,
) -> None:
    """As a `git reset` can leave a file: another of the same size within one clock tick."""
    path = tmp_path / "feedback.json"
    path.write_text('["a"]')
    files: ParsedFiles[list[str]] = ParsedFiles(keep=4, max_bytes=1000)
    parse = Counting()
    files.read(path, parse)
    before = path.stat()
    with path.open("r+") as handle:
        handle.write('["b"]')
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert FileState.of(after) == FileState.of(before)
    assert files.read(path, parse) == ["b"] and parse.calls == 2


def test_what_cannot_be_parsed_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "feedback.json"
    path.write_text('["a"')
    files: ParsedFiles[list[str]] = ParsedFiles(keep=4, max_bytes=1000)
    parse = Counting()
    for _ in range(2):
        with pytest.raises(json.JSONDecodeError):
            files.read(path, parse)
    assert parse.calls == 2
    with pytest.raises(FileNotFoundError):
        files.read(tmp_path / "gone.json", parse)


def test_only_the_files_read_last_are_kept(tmp_path: Path) -> None:
    paths = [tmp_path / f"{n}.json" for n in range(3)]
    for number, path in enumerate(paths):
        path.write_text(f"[{number}]")
    files: ParsedFiles[list[str]] = ParsedFiles(keep=2, max_bytes=1000)
    parse = Counting()
    for path in [*paths, paths[2], paths[1]]:
        files.read(path, parse)
    assert parse.calls == 3  # the last two were kept
    files.read(paths[0], parse)
    assert parse.calls == 4  # the first was dropped


def test_what_is_kept_is_bounded_in_bytes(tmp_path: Path) -> None:
    """A file that only grows would be kept whole, more of it the longer the daemon runs."""
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    small.write_text('["a"]')  # 5 bytes
    large.write_text(json.dumps(["x" * 22]))  # 26 bytes
    files: ParsedFiles[list[str]] = ParsedFiles(keep=4, max_bytes=30)
    parse = Counting()
    files.read(small, parse)
    files.read(large, parse)  # kept: 31 bytes in all, so the older file goes
    files.read(large, parse)
    assert parse.calls == 2
    files.read(small, parse)
    assert parse.calls == 3
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps(["x" * 40]))  # more than the bound alone: never kept
    files.read(huge, parse)
    files.read(huge, parse)
    assert parse.calls == 5

"""Append-only logs: a second line lands after the first, and a cut-short line is terminated;
paths of listed names; a file's state, which tells a changed file from an unchanged one; the
agent folders a workspace holds, and where its links lead."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges.files import (
    FileState,
    agent_ids,
    append_line,
    atomic_write_text,
    child_path,
    file_state,
    is_inside,
)


def test_lines_append_in_order(tmp_path: Path) -> None:
    log = tmp_path / "ratings" / "2026-11.jsonl"
    append_line(log, '{"n": 1}')
    append_line(log, '{"n": 2}\n')
    assert log.read_text(encoding="utf-8") == '{"n": 1}\n{"n": 2}\n'


def test_a_line_cut_short_by_a_crash_is_terminated_first(tmp_path: Path) -> None:
    log = tmp_path / "cases.jsonl"
    log.write_bytes(b'{"n": 1}\n{"n": 2')
    append_line(log, '{"n": 3}')
    assert log.read_text(encoding="utf-8").splitlines() == ['{"n": 1}', '{"n": 2', '{"n": 3}']


def test_a_listed_name_makes_its_path_without_being_interned(tmp_path: Path) -> None:
    # Made at run time, so that neither text is interned in advance.
    name = "".join(["soak-", str(7 * 11 * 13 * 17), ".json"])
    path = child_path(tmp_path, name)
    probe = "".join(["soak-", str(17017), ".json"])
    assert sys.intern(probe) is probe, "the name went into the table of interned strings"
    assert str(path) == f"{tmp_path}/soak-17017.json"
    assert path.name == name and path.parent == tmp_path


def test_a_file_state_changes_with_each_way_a_file_is_written(tmp_path: Path) -> None:
    path = tmp_path / "decisions.jsonl"
    assert file_state(path) is None
    path.write_text("one\n")
    first = file_state(path)
    assert first == FileState.of(os.stat(path)) and first is not None
    atomic_write_text(path, "one\n")  # the same bytes, under a new inode
    replaced = file_state(path)
    assert replaced is not None and replaced.ino != first.ino
    os.utime(path, ns=(0, replaced.mtime_ns + 1))  # touched in place
    assert file_state(path) == replaced._replace(mtime_ns=replaced.mtime_ns + 1)
    with path.open("a") as handle:  # grown in place
        handle.write("two\n")
    grown = file_state(path)
    assert grown is not None and (grown.ino, grown.size) == (replaced.ino, 8)


def test_the_agents_are_the_folders_with_id_names_that_stay_inside(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    assert agent_ids(workspace) == []  # no _data/agents/ yet
    agents, outside = workspace.agents_dir, tmp_path / "elsewhere"
    for name in ["writer", "Coder-2", ".hidden", "two words"]:
        (agents / name).mkdir(parents=True)
    outside.mkdir()
    (agents / "notes.txt").write_text("not an agent")
    (agents / "away").symlink_to(outside, target_is_directory=True)
    (agents / "alias").symlink_to(agents / "writer", target_is_directory=True)
    (agents / "loop").symlink_to(agents / "loop")
    assert agent_ids(workspace) == ["Coder-2", "alias", "writer"]
    assert is_inside(workspace, agents / "alias" / "queue")
    assert not is_inside(workspace, agents / "away")
    assert not is_inside(workspace, agents / "loop")  # leads nowhere
    assert not is_inside(workspace, tmp_path / "ws-other" / "x")


def test_a_path_is_inside_by_where_its_links_lead_not_by_its_spelling(tmp_path: Path) -> None:
    """Below the root with no link on the way is inside without resolving anything; a link
    below the root, or `..`, is followed to where it leads; a root reached through a link of
    its own still holds its folders."""
    real, outside = tmp_path / "real", tmp_path / "outside"
    (real / "_data" / "agents" / "writer" / "queue").mkdir(parents=True)
    outside.mkdir()
    (tmp_path / "link-to-real").symlink_to(real, target_is_directory=True)
    agents = real / "_data" / "agents"
    (agents / "away").symlink_to(outside, target_is_directory=True)
    (agents / "back").symlink_to(agents / "writer", target_is_directory=True)
    workspace = Workspace(real)
    assert is_inside(workspace, agents / "writer" / "queue" / "not-yet.json")
    assert is_inside(workspace, real)
    assert not is_inside(workspace, agents / "away" / "queue")
    assert is_inside(workspace, agents / "back" / "queue")
    assert not is_inside(workspace, agents / ".." / ".." / ".." / "outside")
    assert is_inside(workspace, agents / "writer" / ".." / "writer")
    via_link = Workspace(tmp_path / "link-to-real")
    assert is_inside(via_link, tmp_path / "link-to-real" / "_data" / "agents" / "writer")
    assert is_inside(via_link, agents / "writer")  # the same place, spelt through the target
    assert not is_inside(via_link, tmp_path / "link-to-real" / "_data" / "agents" / "away")

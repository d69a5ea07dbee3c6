"""A commit's objects written as one pack (edges/git/packwrite.py): git reads what feedbackd
packs, a git process started before it too; small packs are merged into one, and a pack that is
not of that kind (deltas, a `.keep`, a damaged one) is left as it is."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from feedbackd.core.people import FEEDBACKD_PERSON
from feedbackd.edges.git.packwrite import (
    MERGE_AT,
    merge_small_packs,
    object_id,
    packed,
    read_whole_objects,
    write_pack,
)
from feedbackd.edges.git.tree import Entry, commit_object, tree_body
from tests.conftest import git


def pack_dir(repo: Path) -> Path:
    return repo / ".git" / "objects" / "pack"


def packs_in(repo: Path) -> list[str]:
    return sorted(path.name for path in pack_dir(repo).glob("*.pack"))


def read_all(repo: Path, ids: list[str]) -> list[bytes]:
    """Each object's content, as one `git cat-file --batch` gives it."""
    request = "".join(f"{sha}\n" for sha in ids).encode()
    out = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=repo, input=request, capture_output=True, check=True
    ).stdout
    contents, position = [], 0
    for _ in ids:
        header_end = out.index(b"\n", position)
        size = int(out[position:header_end].split()[2])
        contents.append(out[header_end + 1 : header_end + 1 + size])
        position = header_end + 1 + size + 1
    return contents


def test_a_packed_commit_is_read_by_git_even_by_a_process_started_before(git_repo: Path) -> None:
    blob = b"a decision's file\n"
    tree = tree_body({b"item.json": Entry(b"100644", object_id("blob", blob))})
    head = git(git_repo, "rev-parse", "HEAD").strip()
    commit = commit_object(
        object_id("tree", tree), [head], FEEDBACKD_PERSON, FEEDBACKD_PERSON, "packed\n", time.time()
    )
    objects = [("blob", blob), ("tree", tree), ("commit", commit)]
    reader = subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=git_repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert reader.stdin is not None and reader.stdout is not None
    reader.stdin.write(b"HEAD\n")
    reader.stdin.flush()
    reader.stdout.read(int(reader.stdout.readline().split()[2]) + 1)  # it has started
    write_pack(pack_dir(git_repo), [packed(kind, content) for kind, content in objects])
    new = object_id("commit", commit)
    reader.stdin.write(f"{new}\n".encode())
    reader.stdin.flush()
    assert reader.stdout.readline().split()[:2] == [new.encode(), b"commit"]
    reader.stdin.close()
    reader.wait()
    reader.stdout.close()
    ids = [object_id(kind, content) for kind, content in objects]
    assert read_all(git_repo, ids) == [content for _, content in objects]
    git(git_repo, "update-ref", "HEAD", new)
    assert git(git_repo, "fsck", "--strict", "--no-dangling") == ""
    (index,) = pack_dir(git_repo).glob("*.idx")
    assert "non delta: 3 objects" in git(git_repo, "verify-pack", "-v", str(index))


def small_packs(repo: Path, count: int, label: str) -> list[str]:
    """`count` packs of one blob each, as commits leave them; the blobs' ids."""
    ids = []
    for number in range(count):
        content = f"{label} {number}\n".encode()
        write_pack(pack_dir(repo), [packed("blob", content)])
        ids.append(object_id("blob", content))
    return ids


def test_small_packs_are_merged_into_one_once_there_are_many(git_repo: Path) -> None:
    ids = small_packs(git_repo, MERGE_AT - 1, "one of many")
    assert not merge_small_packs(pack_dir(git_repo))  # not many yet
    assert len(packs_in(git_repo)) == MERGE_AT - 1
    ids += small_packs(git_repo, 1, "the last")
    write_pack(pack_dir(git_repo), [packed("blob", b"one of many 0\n")])  # the same object again
    assert merge_small_packs(pack_dir(git_repo))
    assert len(packs_in(git_repo)) == 1
    assert read_all(git_repo, ids)[0] == b"one of many 0\n"
    (index,) = pack_dir(git_repo).glob("*.idx")
    assert f"non delta: {MERGE_AT} objects" in git(git_repo, "verify-pack", "-v", str(index))
    assert not list(pack_dir(git_repo).glob("tmp_*"))


def test_packs_that_are_not_small_whole_objects_are_left_as_they_are(git_repo: Path) -> None:
    ids = small_packs(git_repo, MERGE_AT, "merged")
    kept = small_packs(git_repo, 1, "kept by git")
    kept_name = next(name for name in packs_in(git_repo) if _holds(git_repo, name, kept[0]))
    (pack_dir(git_repo) / kept_name.replace(".pack", ".keep")).write_text("")
    damaged = small_packs(git_repo, 1, "damaged")
    damaged_name = next(name for name in packs_in(git_repo) if _holds(git_repo, name, damaged[0]))
    damaged_pack = pack_dir(git_repo) / damaged_name
    os.chmod(damaged_pack, 0o644)
    damaged_pack.write_bytes(damaged_pack.read_bytes()[:-1] + b"\0")  # its checksum is wrong
    deltas = _pack_with_deltas(git_repo)
    assert read_whole_objects(pack_dir(git_repo) / deltas) is None
    with pytest.raises(ValueError, match="damaged"):
        read_whole_objects(damaged_pack)
    assert merge_small_packs(pack_dir(git_repo))
    assert {kept_name, damaged_name, deltas} < set(packs_in(git_repo))
    assert len(packs_in(git_repo)) == 4  # and the merged one
    assert read_all(git_repo, ids + kept)[-1] == b"kept by git 0\n"


@pytest.mark.parametrize(
    "damage",
    [
        lambda index: index[: len(index) // 2],  # cut short
        lambda index: index[:-1] + b"\0",  # its own checksum wrong
        lambda index: b"",  # empty
    ],
    ids=["cut short", "checksum", "empty"],
)
def test_a_pack_whose_index_is_damaged_is_left_and_the_others_merged(
    git_repo: Path, damage: Callable[[bytes], bytes]
) -> None:
    """A damaged index never stops a commit's merge, and nothing is copied from it."""
    ids = small_packs(git_repo, MERGE_AT, "merged")
    bad = small_packs(git_repo, 1, "damaged index")
    bad_name = next(name for name in packs_in(git_repo) if _holds(git_repo, name, bad[0]))
    index = pack_dir(git_repo) / bad_name.replace(".pack", ".idx")
    os.chmod(index, 0o644)
    index.write_bytes(damage(index.read_bytes()))
    with pytest.raises(ValueError):
        read_whole_objects(pack_dir(git_repo) / bad_name)
    assert merge_small_packs(pack_dir(git_repo)) == MERGE_AT
    assert bad_name in packs_in(git_repo) and len(packs_in(git_repo)) == 2
    assert read_all(git_repo, ids)[0] == b"merged 0\n"


def test_a_repository_with_a_multi_pack_index_is_left_to_git(git_repo: Path) -> None:
    small_packs(git_repo, MERGE_AT, "left alone")
    git(git_repo, "multi-pack-index", "write")
    assert not merge_small_packs(pack_dir(git_repo))
    assert len(packs_in(git_repo)) == MERGE_AT


def _holds(repo: Path, pack: str, sha: str) -> bool:
    index = pack_dir(repo) / pack.replace(".pack", ".idx")
    return sha in git(repo, "verify-pack", "-v", str(index))


def _pack_with_deltas(repo: Path) -> str:
    """A pack git made of two nearly equal files, the second a delta of the first."""
    text = "".join(f"line {number} of a long file\n" for number in range(2000))
    first = git_object(repo, text)
    second = git_object(repo, text + "one more line\n")
    name = subprocess.run(
        ["git", "pack-objects", "-q", str(pack_dir(repo) / "pack")],
        cwd=repo,
        input=f"{first}\n{second}\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    index = pack_dir(repo) / f"pack-{name}.idx"
    assert "chain length = 1: 1 object" in git(repo, "verify-pack", "-v", str(index))
    return f"pack-{name}.pack"


def git_object(repo: Path, text: str) -> str:
    return subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo,
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_a_merge_takes_packs_of_one_size_only(git_repo: Path) -> None:
    """A merge reads packs of a size: the big pack of earlier merges is not read again each
    time small ones are merged."""
    big_content = os.urandom(100 << 10)  # a pack over 64 KB: the next size class
    write_pack(pack_dir(git_repo), [packed("blob", big_content)])
    (big,) = packs_in(git_repo)
    small_packs(git_repo, MERGE_AT, "small")
    assert merge_small_packs(pack_dir(git_repo)) == MERGE_AT
    assert big in packs_in(git_repo) and len(packs_in(git_repo)) == 2
    assert read_all(git_repo, [object_id("blob", big_content)]) == [big_content]

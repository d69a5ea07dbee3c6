"""A commit's objects written as one pack (edges/git/packwrite.py): git reads what feedbackd
packs, a git process started before it too, and no repack of git's takes the pack until it is
released (its commit on the branch)."""

from __future__ import annotations

import errno
import subprocess
import time
from pathlib import Path

import pytest

from feedbackd.core.people import FEEDBACKD_PERSON
from feedbackd.edges.git import packwrite
from feedbackd.edges.git.packwrite import object_id, packed, release, write_pack
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


def test_a_pack_is_kept_from_gits_repacks_until_it_is_released(git_repo: Path) -> None:
    """Written, a pack nothing reaches yet survives `git repack -a -d` and a `gc --prune=now`
    (as a pack `git fetch` is writing does); released, it is git's to repack like any other."""
    content = b"a decision nothing names yet\n"
    name = write_pack(pack_dir(git_repo), [packed("blob", content)])
    assert (pack_dir(git_repo) / f"{name}.keep").read_text().startswith("feedbackd ")
    git(git_repo, "repack", "-a", "-d", "-q")
    git(git_repo, "gc", "--quiet", "--prune=now")
    assert read_all(git_repo, [object_id("blob", content)]) == [content]
    release(pack_dir(git_repo), name)
    release(pack_dir(git_repo), name)  # twice: nothing to do
    git(git_repo, "repack", "-a", "-d", "-q")
    git(git_repo, "prune", "--expire=now")
    assert not (pack_dir(git_repo) / f"{name}.pack").exists()
    missing = subprocess.run(
        ["git", "cat-file", "-e", object_id("blob", content)], cwd=git_repo, capture_output=True
    )
    assert missing.returncode != 0  # unreachable once released: git's to drop


def test_a_pack_that_cannot_be_written_leaves_no_keep_behind(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk as the index is written: the error comes through, and neither the half
    pack's `.keep` nor its temporary files are left."""
    put = packwrite._put

    def full_at_the_index(pack_dir: Path, prefix: str, name: str, parts: list[bytes]) -> None:
        if name.endswith(".idx"):
            raise OSError(errno.ENOSPC, "No space left on device")
        put(pack_dir, prefix, name, parts)

    monkeypatch.setattr(packwrite, "_put", full_at_the_index)
    with pytest.raises(OSError, match="No space"):
        write_pack(pack_dir(git_repo), [packed("blob", b"never committed\n")])
    assert sorted(path.name for path in pack_dir(git_repo).iterdir()) == []

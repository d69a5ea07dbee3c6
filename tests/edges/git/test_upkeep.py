"""git's own repack of the packs decisions leave (edges/git/upkeep.py): started once packs pile
up, never for a few, leaving kept packs (a commit still being made) alone, losing nothing, and
collected by its own thread the moment it ends (no zombie git child while the daemon idles)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from feedbackd.edges.git.packwrite import object_id, packed, release, write_pack
from feedbackd.edges.git.runner import BASE_ENV
from feedbackd.edges.git.upkeep import REPACK_AT, PackUpkeep
from tests.conftest import git
from tests.daemon_kit import wait_for


def packs(repo: Path) -> list[Path]:
    return sorted((repo / ".git" / "objects" / "pack").glob("*.pack"))


def decision_packs(repo: Path, count: int) -> list[str]:
    """`count` packs of one blob each, released as a commit releases them; the blobs' ids."""
    pack_dir = repo / ".git" / "objects" / "pack"
    ids = []
    for number in range(count):
        content = f"decision {number}\n".encode()
        release(pack_dir, write_pack(pack_dir, [packed("blob", content)]))
        ids.append(object_id("blob", content))
    return ids


def upkeep_of(repo: Path) -> PackUpkeep:
    return PackUpkeep(repo, repo / ".git", "git", {**BASE_ENV, "GIT_DIR": str(repo / ".git")})


def zombie_children() -> list[int]:
    """This process's git children that have ended but were never waited for (another test in
    this process may have left a child of its own, not git, to end meanwhile)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                name, _, rest = Path(f"/proc/{entry}/stat").read_text().partition(" (")
                command, _, after = rest.rpartition(")")
            except OSError:
                continue
            fields = after.split()
            if fields[0] == "Z" and int(fields[1]) == os.getpid() and command == "git":
                found.append(int(name))
    return found


def test_a_few_packs_are_left_as_they_are(git_repo: Path) -> None:
    decision_packs(git_repo, REPACK_AT - 2)
    upkeep = upkeep_of(git_repo)
    assert upkeep.after_commit() is False
    upkeep.close()
    assert len(packs(git_repo)) == REPACK_AT - 2


def test_many_packs_are_rolled_up_by_git_and_a_kept_one_is_left(git_repo: Path) -> None:
    ids = decision_packs(git_repo, REPACK_AT)
    pack_dir = git_repo / ".git" / "objects" / "pack"
    in_the_making = b"a decision whose commit is still being made\n"
    kept = write_pack(pack_dir, [packed("blob", in_the_making)])
    upkeep = upkeep_of(git_repo)
    left_before = set(zombie_children())  # by an earlier test of this worker, not ours to judge
    upkeep.after_commit()  # starts git's repack in the background
    wait_for(lambda: len(packs(git_repo)) <= 3, what="git's repack")
    # ended while nothing else happens (the daemon idle): collected all the same
    wait_for(lambda: set(zombie_children()) <= left_before, what="the ended repack to be collected")
    wait_for(upkeep.after_commit, what="the repack to count as ended")
    upkeep.close()
    assert (pack_dir / f"{kept}.pack").exists()
    for sha in [*ids, object_id("blob", in_the_making)]:
        git(git_repo, "cat-file", "-e", sha)  # unreachable, and still there


def test_no_repack_starts_while_a_users_gc_runs_and_one_starts_after(git_repo: Path) -> None:
    """git's own gc repacks everything; a repack of ours beside it would race it for the packs."""
    decision_packs(git_repo, REPACK_AT)
    gc_pid = git_repo / ".git" / "gc.pid"
    gc_pid.write_text(f"{os.getpid()} {socket.gethostname()}")  # a live gc, as git writes it
    upkeep = upkeep_of(git_repo)
    upkeep.after_commit()
    upkeep.close()
    assert len(packs(git_repo)) == REPACK_AT
    gc_pid.unlink()  # the gc ended
    upkeep.after_commit()
    wait_for(lambda: len(packs(git_repo)) <= 2, what="git's repack once the gc is gone")
    upkeep.close()


def test_a_gc_pid_left_by_a_killed_gc_does_not_hold_repacks_back(git_repo: Path) -> None:
    decision_packs(git_repo, REPACK_AT)
    (git_repo / ".git" / "gc.pid").write_text(f"{dead_pid()} {socket.gethostname()}")
    upkeep = upkeep_of(git_repo)
    upkeep.after_commit()
    wait_for(lambda: len(packs(git_repo)) <= 2, what="git's repack")
    upkeep.close()


def test_a_failed_repack_is_tried_again_soon_not_after_many_more_packs(
    git_repo: Path, tmp_path: Path
) -> None:
    """A repack that met a user's gc fails; waiting for REPACK_EVERY more packs would let them
    pass git's own limit on a busy site, so the next commit after a short pause tries again."""
    decision_packs(git_repo, REPACK_AT)
    tries = tmp_path / "tries"
    flaky_git = tmp_path / "flaky-git"  # fails the first repack, as one racing a gc does
    flaky_git.write_text(
        f'#!/bin/sh\necho try >> "{tries}"\n'
        f'[ "$(wc -l < "{tries}")" -gt 1 ] || {{ echo "fatal: no pack" >&2; exit 128; }}\n'
        'exec git "$@"\n'
    )
    flaky_git.chmod(0o755)
    upkeep = PackUpkeep(
        git_repo, git_repo / ".git", str(flaky_git), {**BASE_ENV, "GIT_DIR": str(git_repo / ".git")}
    )
    upkeep.after_commit()
    wait_for(lambda: tries.exists() and upkeep.after_commit(), what="the first repack to fail")
    assert len(packs(git_repo)) == REPACK_AT  # no more packs came: still tried again
    wait_for(lambda: upkeep.after_commit() or len(packs(git_repo)) <= 2, what="the second repack")
    wait_for(lambda: len(packs(git_repo)) <= 2, what="the second repack to roll the packs up")
    upkeep.close()
    assert tries.read_text().count("try") == 2


def dead_pid() -> int:
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid

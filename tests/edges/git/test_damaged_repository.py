"""A damaged repository (objects HEAD reaches are missing): feedbackd never records on top of
it. A read that meets the damage says so (RepositoryDamaged) instead of taking a lost file for
one never committed; the daemon stops recording, says why in `status`, and resumes once git
finds the repository whole again."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from feedbackd.core.errors import GitError, RepositoryDamaged
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.git.runner import GitRunner
from tests.conftest import git
from tests.daemon_kit import (
    WAKEUPS_PER_S_AT_MOST,
    DaemonProcess,
    NotifyListener,
    decided,
    sleeps,
    status_json,
    wait_for,
)
from tests.git_kit import ADA, message, write
from tests.workspace_kit import Site, draft


def loose_objects(repo: Path) -> None:
    """Every object of the repository as a file of its own, so one can be taken away."""
    packs = repo / ".git" / "objects" / "pack"
    for pack in sorted(packs.glob("*.pack")):
        moved = pack.rename(repo.parent / pack.name)
        pack.with_suffix(".idx").unlink()
        with moved.open("rb") as stream:
            subprocess.run(["git", "unpack-objects", "-q"], cwd=repo, stdin=stream, check=True)
        moved.unlink()


def take_away(repo: Path, sha: str, keep: Path) -> Path:
    """Move the loose object `sha` to `keep`; where it belongs (to put it back)."""
    where = repo / ".git" / "objects" / sha[:2] / sha[2:]
    shutil.move(where, keep)
    return where


def test_a_lost_file_at_head_is_damage_not_a_file_never_committed(
    git_repo: Path, tmp_path: Path
) -> None:
    write(git_repo, "_data/agents/w/decisions.jsonl", '{"item": "qi-1"}\n')
    git(git_repo, "add", ".")
    git(git_repo, "commit", "-qm", "a decision")
    with GitRepo(git_repo) as repo:
        write(git_repo, "notes.md", "opens libgit2\n")
        repo.commit_paths(["notes.md"], message(), ADA)
        lost = git(git_repo, "rev-parse", "HEAD:_data/agents/w/decisions.jsonl").strip()
        loose_objects(git_repo)
        take_away(git_repo, lost, tmp_path / "lost")
        assert repo.file_at_head("_data/agents/w/never.jsonl") is None  # truly absent
        with pytest.raises(RepositoryDamaged, match=lost):
            repo.file_at_head("_data/agents/w/decisions.jsonl")


def test_a_commit_on_a_head_whose_commit_is_lost_is_refused(git_repo: Path, tmp_path: Path) -> None:
    head = git(git_repo, "rev-parse", "HEAD").strip()
    loose_objects(git_repo)
    take_away(git_repo, head, tmp_path / "lost")
    write(git_repo, "fb/1.txt", "a decision\n")
    with GitRepo(git_repo) as repo, pytest.raises(RepositoryDamaged, match=head[:12]):
        repo.commit_paths(["fb/1.txt"], message(), ADA)
    assert (git_repo / ".git" / "refs" / "heads" / "main").read_text().strip() == head


@pytest.mark.slow
def test_the_daemon_stops_recording_on_damage_and_resumes_once_repaired(
    tmp_path: Path, listener: NotifyListener, start: type[DaemonProcess]
) -> None:
    site = Site(tmp_path / "ws")
    for name in ("qi-1", "qi-2"):
        site.write("w", f"{name}.json", draft({"title": f"Draft {name}"}))
    site.reconcile()
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    site.git("remote", "add", "origin", str(remote))
    site.git("push", "-q", "origin", "main")
    (site.root / "feedbackd.yaml").write_text(
        (site.root / "feedbackd.yaml").read_text() + "git:\n  remote: origin\n"
    )
    head = site.git("rev-parse", "HEAD").strip()
    loose_objects(site.root)
    where = take_away(site.root, head, tmp_path / "lost")
    daemon = start(site, listener)
    daemon.wait_ready()
    site.move("w", "qi-1.json", "approved")

    def stopped() -> bool:
        return any("recording stopped" in line for line in status_json(site)["problems"])

    wait_for(stopped, what="status to say recording stopped")
    assert "git fsck" in " ".join(status_json(site)["problems"])
    assert (site.root / ".git" / "refs" / "heads" / "main").read_text().strip() == head
    assert decided(site, "w") == []
    before, began = sleeps(daemon.pid), time.monotonic()
    time.sleep(1.0)  # the measurement itself: a daemon that waits for the repair sleeps
    assert (sleeps(daemon.pid) - before) / (time.monotonic() - began) <= WAKEUPS_PER_S_AT_MOST

    shutil.move(tmp_path / "lost", where)  # restored, as from a clone
    daemon.signal(signal.SIGHUP)
    wait_for(lambda: decided(site, "w") == ["qi-1"], what="the decision, once repaired")
    wait_for(lambda: status_json(site)["problems"] == [], what="the problem to clear")
    assert site.git("log", "--format=%s").count("approve(w): qi-1") == 1
    assert site.git("fsck", "--strict", "--no-dangling") == ""
    wait_for(
        lambda: site.git("rev-parse", "origin/main") == site.git("rev-parse", "HEAD"),
        what="the repaired history pushed",
    )


def test_doctor_reports_a_damaged_repository_and_the_way_back(tmp_path: Path) -> None:
    site = Site(tmp_path / "ws")
    site.write("w", "qi-1.json", draft({"title": "A draft"}))
    site.reconcile()
    assert site.cli("doctor").returncode == 0
    head = site.git("rev-parse", "HEAD").strip()
    loose_objects(site.root)
    where = take_away(site.root, head, tmp_path / "lost")
    done = site.cli("doctor")
    assert done.returncode == 1
    assert "problem: .git: git fsck finds the repository damaged: " in done.stdout
    assert f"invalid sha1 pointer {head}" in done.stdout
    assert "restore the missing objects from a clone" in done.stdout
    shutil.move(tmp_path / "lost", where)
    assert site.cli("doctor").returncode == 0


def test_gits_own_words_for_a_lost_object_are_damage_and_a_bad_name_is_not(
    git_repo: Path, tmp_path: Path
) -> None:
    head = git(git_repo, "rev-parse", "HEAD").strip()
    runner = GitRunner(git_repo, git_repo / ".git")
    with pytest.raises(GitError) as unknown:
        runner.run(["log", "--format=%H", "no-such-branch"])
    assert not isinstance(unknown.value, RepositoryDamaged)
    loose_objects(git_repo)
    take_away(git_repo, head, tmp_path / "lost")
    with pytest.raises(RepositoryDamaged, match="bad object HEAD") as lost:
        runner.run(["log", "--format=%H"])
    assert "git fsck" in lost.value.hint

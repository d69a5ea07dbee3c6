"""A decision's commit in process (edges/git/native.py): the objects and the move of HEAD made
through libgit2, with git's guarantees kept, and the cases left to git.

The race at the end runs a user's `git commit` and `git reset --hard` (started through a shell,
as a user's are, so that feedbackd's look at the running git commands sees them as someone
else's) between 200 in-process commits: no commit, ours or the user's, is lost unless a reset
took it off, each of ours moved HEAD once from the commit it was built on and holds exactly its
own file, so nothing a reset dropped comes back. (What it does not check: git 2.39's `reset
--hard` and `commit` read the index before they take its lock, so one that starts while
feedbackd commits may work from the index as it was, and leave the new file untracked or commit
its removal; see docs/git.md.)
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pygit2
import pytest

from feedbackd.core.errors import GitError
from feedbackd.edges.git import commit
from feedbackd.edges.git.batch import GitBatch, GitBatchKeeper
from feedbackd.edges.git.commit import CommitWriter, WorkTreeChange
from feedbackd.edges.git.native import LOOSE_FROM_PACKS, NativeStore
from feedbackd.edges.git.packwrite import packed, release, write_pack
from feedbackd.edges.git.repo import GitRepo, HeadMoved
from feedbackd.edges.git.upkeep import REPACK_AT
from tests.conftest import git
from tests.daemon_kit import wait_for
from tests.git_kit import ADA, message, write

SEED = 29
COMMITS = 200


def test_the_move_of_head_is_in_both_reflogs(git_repo: Path) -> None:
    write(git_repo, "_data/a.json", "{}\n")
    with GitRepo(git_repo) as repo:
        sha = repo.commit_paths(["_data/a.json"], message(summary="qi-7"), ADA)
    assert git(git_repo, "rev-parse", "HEAD").strip() == sha
    subject = message(summary="qi-7").splitlines()[0]
    for ref in ("HEAD", "main"):
        assert git(git_repo, "reflog", "-1", "--format=%gs", ref).strip() == f"feedbackd: {subject}"


def test_in_a_run_the_index_holds_each_commit_as_soon_as_head_names_it(git_repo: Path) -> None:
    """A small index follows each commit of a run: its update starts before HEAD moves and is
    in place when the commit is made, so a `git stash` never finds a committed file missing
    from the index; what the user staged stays staged."""
    write(git_repo, "notes.md", "the user's own work, staged\n")
    git(git_repo, "add", "notes.md")
    names = [f"_data/run/{number}.json" for number in range(6)]
    with GitRepo(git_repo) as repo, repo.holding(repo.settled_head(), index_once=True):
        for done, name in enumerate(names):
            write(git_repo, name, f'{{"n": {done}}}\n')
            repo.commit_paths([name], message(), ADA)
            assert git(git_repo, "ls-files", "--", "_data/run").split() == sorted(names[: done + 1])
        write(git_repo, names[0], "unchanged, so not committed\n")
        write(git_repo, names[0], '{"n": 0}\n')
        assert repo.commit_paths([names[0]], message(), ADA) is None
    assert git(git_repo, "status", "--porcelain") == "A  notes.md\n"
    assert not list((git_repo / ".git").glob("feedbackd-index-*"))


def test_a_file_changed_while_its_index_update_runs_gets_the_committed_entry(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index update starts before the commit stores the files: one that changes between
    the update's reading and the commit's storing gets its entry from the commit."""
    rel = "_data/run/a.json"
    write(git_repo, rel, "as update-index reads it\n")
    store = CommitWriter._work_tree_change

    def changed_before_it_is_stored(
        writer: CommitWriter, rels: list[str], head_tree: str | None
    ) -> WorkTreeChange:
        copy, index = (
            git_repo / ".git" / f"feedbackd-index-{os.getpid()}",
            git_repo / ".git" / "index",
        )
        wait_for(
            lambda: copy.exists() and copy.stat().st_ino != index.stat().st_ino, what="its index"
        )
        write(git_repo, rel, "as the commit stores it, a little later\n")
        return store(writer, rels, head_tree)

    monkeypatch.setattr(CommitWriter, "_work_tree_change", changed_before_it_is_stored)
    with GitRepo(git_repo) as repo, repo.holding(repo.settled_head(), index_once=True):
        repo.commit_paths([rel], message(), ADA)
    staged = git(git_repo, "ls-files", "-s", "--", rel).split()[1]
    assert staged == git(git_repo, "rev-parse", f"HEAD:{rel}").strip()
    assert git(git_repo, "status", "--porcelain") == ""


def test_an_index_update_that_fails_in_a_run_is_logged_and_healed(
    tmp_path: Path,
    git_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The commits stand when git cannot update the index beside them: each lagging path is
    named with the command that fixes it, the index is left as it was, and heal_index brings
    it in line afterwards."""
    real = shutil.which("git")
    failing = tmp_path / "bin" / "git"
    failing.parent.mkdir()
    failing.write_text(
        f'#!/bin/sh\ncase "$1" in update-index) echo "fatal: disk on fire" >&2; exit 128;; esac\n'
        f'exec "{real}" "$@"\n'
    )
    failing.chmod(0o755)
    monkeypatch.setenv("GIT_PYTHON_GIT_EXECUTABLE", str(failing))
    names = [f"_data/run/{number}.json" for number in range(3)]
    with GitRepo(git_repo) as repo:
        with repo.holding(repo.settled_head(), index_once=True):
            for number, name in enumerate(names):
                write(git_repo, name, f"{number}\n")
                assert repo.commit_paths([name], message(), ADA) is not None
        assert git(git_repo, "ls-files", "--", "_data/run") == ""  # lagging, as it was
        warnings = [r.getMessage() for r in caplog.records if "could not update" in r.getMessage()]
        assert len(warnings) == 3 and all("disk on fire" in text for text in warnings)
        assert "run: git reset -q HEAD -- _data/run/2.json" in warnings[-1]
        assert (git_repo / ".git" / "feedbackd-lagging-index").exists()  # for the next writer
        monkeypatch.delenv("GIT_PYTHON_GIT_EXECUTABLE")
    with GitRepo(git_repo) as repo:
        assert sorted(repo.heal_index()) == names
    assert git(git_repo, "status", "--porcelain") == ""
    assert not (git_repo / ".git" / "feedbackd-lagging-index").exists()


def test_a_first_commit_creates_the_branch(tmp_path: Path) -> None:
    root = tmp_path / "new"
    GitRepo.init(root)
    write(root, "a.txt", "one\n")
    with GitRepo(root) as repo:
        sha = repo.commit_paths(["a.txt"], message(), ADA)
    assert git(root, "rev-parse", "main").strip() == sha
    assert git(root, "status", "--porcelain") == ""


def test_a_branch_whose_lock_a_git_command_holds_is_not_moved(git_repo: Path) -> None:
    before = git(git_repo, "rev-parse", "HEAD").strip()
    lock = git_repo / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")
    write(git_repo, "_data/a.json", "{}\n")
    with GitRepo(git_repo) as repo, pytest.raises(GitError) as raised:
        repo.commit_paths(["_data/a.json"], message(), ADA)
    assert "main.lock" in raised.value.message
    assert raised.value.hint and "wait for it" in raised.value.hint
    assert lock.exists()  # someone else's: left alone
    assert git(git_repo, "rev-parse", "HEAD").strip() == before
    lock.unlink()
    with GitRepo(git_repo) as repo:
        assert repo.commit_paths(["_data/a.json"], message(), ADA) is not None


def test_a_head_moved_by_update_ref_meanwhile_is_not_overwritten(git_repo: Path) -> None:
    write(git_repo, "_data/a.json", "{}\n")
    first = git(git_repo, "rev-parse", "HEAD").strip()
    with GitRepo(git_repo) as repo, pytest.raises(HeadMoved), repo.holding(first):
        # (no `git commit`: the index lock is held) a ref moved without it, as by a script
        theirs = git(git_repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "the user's")
        git(git_repo, "update-ref", "refs/heads/main", theirs.strip())
        repo.commit_paths(["_data/a.json"], message(), ADA)
    assert git(git_repo, "log", "-1", "--format=%s").strip() == "the user's"
    # the index update begun for the commit was dropped with it
    assert git(git_repo, "ls-files", "--", "_data/a.json") == ""
    assert not list((git_repo / ".git").glob("feedbackd-index-*"))


def test_a_file_with_a_filter_driver_is_stored_through_git(git_repo: Path) -> None:
    """libgit2 does not run a filter driver (Git LFS is one): git stores such a file."""
    git(git_repo, "config", "filter.upper.clean", "tr a-z A-Z")
    git(git_repo, "config", "filter.upper.smudge", "cat")
    write(git_repo, ".gitattributes", "*.up filter=upper\n")
    write(git_repo, "notes/a.up", "shout\n")
    write(git_repo, "notes/b.txt", "quiet\n")
    with GitRepo(git_repo) as repo:
        repo.commit_paths([".gitattributes", "notes/a.up", "notes/b.txt"], message(), ADA)
    assert git(git_repo, "cat-file", "blob", "HEAD:notes/a.up") == "SHOUT\n"
    assert git(git_repo, "cat-file", "blob", "HEAD:notes/b.txt") == "quiet\n"


def test_a_symbolic_link_is_stored_as_git_stores_it(git_repo: Path) -> None:
    (git_repo / "link").symlink_to("README.md")
    with GitRepo(git_repo) as repo:
        repo.commit_paths(["link"], message(), ADA)
    assert git(git_repo, "ls-tree", "HEAD", "link").split()[0] == "120000"
    assert git(git_repo, "cat-file", "blob", "HEAD:link") == "README.md"
    assert git(git_repo, "status", "--porcelain") == ""


def _user(root: Path, *args: str) -> bool:
    """A git command of the user's: through a shell, so its parent is not this process."""
    done = subprocess.run(
        ["sh", "-c", 'git "$@"; exit $?', "sh", *args], cwd=root, capture_output=True, check=False
    )
    return done.returncode == 0


class _UserAtWork(threading.Thread):
    """Commits files of its own and resets the branch one commit back, until told to stop."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.root, self.stop, self.random = root, threading.Event(), random.Random(SEED)
        self.commits = self.resets = 0
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self._one_step()
                time.sleep(self.random.uniform(0, 0.02))
        except BaseException as error:  # (reported by the test)
            self.failure = error

    def _one_step(self) -> None:
        if self.random.random() < 0.6:
            rel = f"user/{self.commits:04d}.txt"
            write(self.root, rel, f"user file {self.commits}\n")
            # (either may meet feedbackd's index lock and stop at once, changing nothing)
            if _user(self.root, "add", "--", rel) and _user(self.root, "commit", "-qm", rel):
                self.commits += 1
            else:
                _user(self.root, "reset", "-q", "--", rel)
        elif _user(self.root, "reset", "-q", "--hard", "HEAD~1"):
            self.resets += 1


def _commit_all(root: Path) -> dict[int, str]:
    """COMMITS in-process commits, each of a file of its own written holding the index lock
    (as a decision is), planned again when HEAD moved; the commit of each."""
    made: dict[int, str] = {}
    kept = GitBatchKeeper()
    with GitRepo(root, kept=kept, lock_wait_s=20) as repo:
        assert kept.batch_for(root, root / ".git", "git").native() is not None
        for number in range(COMMITS):
            while number not in made:
                try:
                    repo.users_git.settle(look_afresh=True)
                    with repo.holding(repo.settled_head()) as held:
                        write(root, f"fb/{number:03d}.txt", f"decision {number}\n")
                        repo.commit_paths([f"fb/{number:03d}.txt"], message(), ADA)
                        made[number] = str(held.head)
                except HeadMoved:
                    continue
    kept.close()
    return made


def _moves(root: Path) -> list[tuple[str, str, str]]:
    """HEAD's reflog: (old, new, what moved it) for each move."""
    moves = []
    for line in (root / ".git" / "logs" / "HEAD").read_text().splitlines():
        ids, _, subject = line.partition("\t")
        old, new = ids.split()[:2]
        moves.append((old, new, subject))
    return moves


@pytest.mark.slow
def test_user_commits_and_hard_resets_between_in_process_commits(git_repo: Path) -> None:
    user = _UserAtWork(git_repo)
    user.start()
    try:
        made = _commit_all(git_repo)
    finally:
        user.stop.set()
        user.join(timeout=30)
    assert user.failure is None
    assert user.commits >= 5 and user.resets >= 5, (user.commits, user.resets)
    on_branch = set(git(git_repo, "rev-list", "HEAD").split())
    moves = _moves(git_repo)
    dropped = {
        sha
        for old, new, subject in moves
        if subject.startswith("reset: moving to")
        for sha in git(git_repo, "rev-list", old, f"^{new}").split()
    }
    ours = [(old, new) for old, new, subject in moves if subject.startswith("feedbackd: ")]
    # each decision moved HEAD once, from the commit it was built on (nothing overwritten)
    assert sorted(new for _, new in ours) == sorted(made.values())
    for old, new in ours:
        assert git(git_repo, "rev-parse", f"{new}^").strip() == old
    theirs = [new for _, new, subject in moves if subject.startswith("commit: ")]
    assert len(theirs) == user.commits
    for number, sha in made.items():
        # exactly its own file: no dropped decision comes back with it, nothing else goes
        changed = git(git_repo, "diff-tree", "--no-commit-id", "--name-status", "-r", sha)
        assert changed == f"A\tfb/{number:03d}.txt\n"
    # nothing lost: a commit, ours or the user's, is off the branch only when a reset took it
    for sha in [*made.values(), *theirs]:
        assert sha in on_branch or sha in dropped, sha
    assert git(git_repo, "fsck", "--connectivity-only", "--no-dangling") == ""


def free_object_folder(git_repo: Path, text: str) -> tuple[bytes, Path]:
    """Content (from `text`) whose object folder (`.git/objects/xx`) does not exist yet."""
    for number in range(1000):
        content = f"{text} ({number})\n".encode()
        done = subprocess.run(
            ["git", "hash-object", "--stdin"], cwd=git_repo, input=content, capture_output=True
        )
        folder = git_repo / ".git" / "objects" / done.stdout.decode()[:2]
        if not folder.exists():
            return content, folder
    raise AssertionError("every object folder is taken")


def test_objects_that_cannot_be_packed_are_stored_one_by_one_or_left_to_git(
    git_repo: Path,
) -> None:
    """A commit's objects go to disk as one pack; where the pack cannot be written, each is
    stored as a file of its own, and one libgit2 cannot store either is handed back for git."""
    stored, _ = free_object_folder(git_repo, "stored on its own")
    refused, folder = free_object_folder(git_repo, "refused by libgit2")
    store = NativeStore.open(git_repo, git_repo / ".git")
    assert store is not None
    packs = git_repo / ".git" / "objects" / "pack"
    try:
        ids = [store.store("blob", stored), store.store("blob", refused)]
        shutil.rmtree(packs)
        packs.write_text("not a folder")
        folder.write_text("not a folder")
        assert store.write_pending() == [("blob", refused)]
        assert git(git_repo, "cat-file", "blob", ids[0]).encode() == stored
        assert store.write_pending() == []  # nothing is handed back twice
    finally:
        store.close()


def test_a_filter_in_the_systems_gitattributes_leaves_the_file_to_git(
    tmp_path: Path, git_repo: Path
) -> None:
    """Attributes are looked up without the system's file only while there is none: a filter
    driver set there still sends the file to git."""
    system = tmp_path / "etc"
    system.mkdir()
    levels = pygit2.settings.search_path
    before = levels[pygit2.enums.ConfigLevel.SYSTEM]
    levels[pygit2.enums.ConfigLevel.SYSTEM] = str(system)
    write(git_repo, "data.bin", "large content\n")
    try:
        for attributes, stored_here in (None, True), ("*.bin filter=lfs\n", False):
            if attributes is not None:
                (system / "gitattributes").write_text(attributes)
            store = NativeStore.open(git_repo, git_repo / ".git")
            assert store is not None
            assert (store.store_file("data.bin") is not None) == stored_here
            store.close()
    finally:
        levels[pygit2.enums.ConfigLevel.SYSTEM] = before


def test_closing_writes_what_is_stored_all_in_one_pack_or_none_of_it(git_repo: Path) -> None:
    """What a closed store held goes to disk whole, however big, or not at all: never a part
    of a commit without the rest."""
    big, small = os.urandom(400 << 10), b"a small one\n"
    store = NativeStore.open(git_repo, git_repo / ".git")
    assert store is not None
    ids = [store.store("blob", big), store.store("blob", small)]
    store.close()
    shown = subprocess.run(["git", "cat-file", "blob", ids[0]], cwd=git_repo, capture_output=True)
    assert shown.stdout == big and not any(is_loose(git_repo, sha) for sha in ids)
    assert git(git_repo, "cat-file", "blob", ids[1]).encode() == small
    store = NativeStore.open(git_repo, git_repo / ".git")
    assert store is not None
    ids = [store.store("blob", big + b"!"), store.store("blob", small + b"!")]
    packs = git_repo / ".git" / "objects" / "pack"
    shutil.rmtree(packs)
    packs.write_text("not a folder")
    store.close()
    assert not any(is_loose(git_repo, sha) for sha in ids)


def test_a_commit_libgit2_cannot_store_fails_in_gits_words(git_repo: Path) -> None:
    """No bare libgit2 error: git is asked to store what libgit2 could not, and says why."""
    content, folder = free_object_folder(git_repo, "an object whose folder is taken")
    write(git_repo, "docs/refused.md", content.decode())
    packs = git_repo / ".git" / "objects" / "pack"
    shutil.rmtree(packs)
    packs.write_text("not a folder")
    folder.write_text("not a folder")
    head = git(git_repo, "rev-parse", "HEAD")
    with GitRepo(git_repo) as repo, pytest.raises(GitError, match="git hash-object failed"):
        repo.commit_paths(["docs/refused.md"], message(), ADA)
    assert git(git_repo, "rev-parse", "HEAD") == head


def is_loose(repo: Path, sha: str) -> bool:
    return (repo / ".git" / "objects" / sha[:2] / sha[2:]).exists()


def test_commits_write_packs_that_git_repacks_and_none_is_held_open(git_repo: Path) -> None:
    """Each commit's blobs, trees and commit object go to disk in one pack, not a file each;
    git's own repack rolls them up now and then, so packs never pile up towards git's
    `gc.autoPackLimit` (50); neither libgit2 nor the helpers keep the old ones open, and no
    pack is left held (`.keep`) once its commit is on the branch."""
    kept = GitBatchKeeper()
    opened: list[int] = []
    made: list[str] = []
    most = 0
    for number in range(4 * REPACK_AT):
        write(git_repo, f"fb/{number:03d}.txt", f"decision {number}\n")
        with GitRepo(git_repo, kept=kept) as repo:
            made.append(repo.commit_paths([f"fb/{number:03d}.txt"], message(), ADA) or "")
        opened.append(len(os.listdir("/proc/self/fd")))
        most = max(most, len(list((git_repo / ".git/objects/pack").glob("*.pack"))))
        assert not list((git_repo / ".git/objects/pack").glob("*.keep"))
    kept.close()  # waits for a repack still running
    trees = [git(git_repo, "rev-parse", f"{sha}^{{tree}}").strip() for sha in made]
    files = [
        git(git_repo, "rev-parse", f"{sha}:fb/{number:03d}.txt").strip()
        for number, sha in enumerate(made)
    ]
    # nor does the index update store a file of its own for each blob
    assert not [sha for sha in [*made, *trees, *files] if is_loose(git_repo, sha)]
    assert most < 40, most  # git's gc --auto starts at 50
    assert max(opened) - opened[0] < 2 * REPACK_AT  # not one more open file per commit
    assert git(git_repo, "fsck", "--strict", "--no-dangling") == ""
    assert git(git_repo, "status", "--porcelain") == ""


def test_a_commit_of_big_objects_stores_a_file_for_each(git_repo: Path) -> None:
    """A pack is for a commit's small objects: a big one is stored as a file of its own."""
    content = os.urandom(400 << 10)  # compresses to no less
    (git_repo / "big.bin").write_bytes(content)
    with GitRepo(git_repo) as repo:
        repo.commit_paths(["big.bin"], message(), ADA)
    assert is_loose(git_repo, git(git_repo, "rev-parse", "HEAD:big.bin").strip())
    shown = ["git", "cat-file", "blob", "HEAD:big.bin"]
    assert subprocess.run(shown, cwd=git_repo, capture_output=True).stdout == content
    assert git(git_repo, "fsck", "--strict", "--no-dangling") == ""


def test_reads_in_process_answer_as_git_cat_file_does(git_repo: Path) -> None:
    """Once libgit2 is open for commits, reads go there: the same answers as `git cat-file`,
    HEAD read afresh after a user's commit, and a name that is not UTF-8 left to git."""
    write(git_repo, "docs/caf\u00e9.md", "x\n")
    write(git_repo, "docs/latin1 \udce9.md", "y\n")  # a name that is not UTF-8, as its bytes
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "names")
    head = git(git_repo, "rev-parse", "HEAD").strip()
    names = [
        "HEAD", head, "HEAD^{tree}", "HEAD:docs/caf\u00e9.md", "HEAD:docs/latin1 \udce9.md",
        "HEAD:docs/missing.md", "0" * 40, "not a name", "HEAD~5",
    ]  # fmt: skip
    through_git = GitBatch(git_repo, git_repo / ".git")
    in_process = GitBatch(git_repo, git_repo / ".git")
    try:
        assert in_process.native() is not None
        answers = [in_process.read(name) for name in names]
        assert answers == [through_git.read(name) for name in names]
        assert [(found.kind, found.content) for found in answers[3:5] if found] == [
            ("blob", b"x\n"),
            ("blob", b"y\n"),
        ]
        git(git_repo, "commit", "-q", "--allow-empty", "-m", "the user's")
        moved = in_process.read("HEAD")
        assert moved is not None and moved.sha == git(git_repo, "rev-parse", "HEAD").strip()
    finally:
        through_git.close()
        in_process.close()


def test_a_repository_whose_reads_libgit2_would_answer_otherwise_is_left_to_git(
    git_repo: Path,
) -> None:
    """git reads through replace refs and fetches a partial clone's missing objects; libgit2
    does neither, so such a repository's objects go through git."""
    git_dir = git_repo / ".git"

    def in_process() -> bool:
        store = NativeStore.open(git_repo, git_dir)
        if store is not None:
            store.close()
        return store is not None

    assert in_process()
    head = git(git_repo, "rev-parse", "HEAD").strip()
    git(git_repo, "commit", "-q", "--allow-empty", "-m", "another")
    git(git_repo, "replace", head, git(git_repo, "rev-parse", "HEAD").strip())
    assert not in_process()
    git(git_repo, "pack-refs", "--all")  # the replace ref now lives in packed-refs alone
    assert not in_process()
    git(git_repo, "replace", "-d", head)
    assert in_process()
    git(git_repo, "config", "extensions.partialClone", "origin")
    assert not in_process()


def test_a_users_repack_between_a_decisions_pack_and_head_loses_nothing(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one moment nothing reaches a decision's objects: its pack is written, HEAD does not
    name its commit yet. A user's `git repack -a -d` there (which drops what no ref reaches)
    leaves the pack alone, as it leaves a pack `git fetch` is still writing, and the commit
    lands whole."""
    move_head = NativeStore.move_head

    def repack_first(store: NativeStore, new: str, old: str | None, reflog: str) -> None:
        subprocess.run(["git", "repack", "-a", "-d", "-q"], cwd=git_repo, check=True)
        subprocess.run(["git", "gc", "--quiet", "--prune=now"], cwd=git_repo, check=True)
        move_head(store, new, old, reflog)

    monkeypatch.setattr(NativeStore, "move_head", repack_first)
    with GitRepo(git_repo) as repo:
        for number in range(3):
            write(git_repo, f"fb/{number}.txt", f"decision {number}\n")
            repo.commit_paths([f"fb/{number}.txt"], message(), ADA)
    assert git(git_repo, "fsck", "--strict", "--no-dangling") == ""
    for number in range(3):
        assert git(git_repo, "show", f"HEAD:fb/{number}.txt") == f"decision {number}\n"
    assert not list((git_repo / ".git/objects/pack").glob("*.keep"))


def test_a_pack_held_by_a_feedbackd_that_died_is_given_back_to_git(git_repo: Path) -> None:
    """A `kill -9` between a pack and its commit leaves the pack's `.keep`: git would never
    repack it. The next feedbackd to open the repository removes such a keep, and only such:
    one of a running process, of another machine, or of git's own stays."""
    packs = git_repo / ".git" / "objects" / "pack"
    packs.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    keeps = {
        "pack-dead.keep": f"feedbackd {dead_pid()} on {host}\n",
        "pack-alive.keep": f"feedbackd {os.getpid()} on {host}\n",
        "pack-elsewhere.keep": f"feedbackd {dead_pid()} on another-machine\n",
        "pack-fetch.keep": f"fetch-pack {dead_pid()} on {host}\n",
        "pack-users.keep": "",
    }
    for name, text in keeps.items():
        (packs / name).write_text(text)
    write(git_repo, "fb/1.txt", "a decision\n")
    with GitRepo(git_repo) as repo:
        repo.commit_paths(["fb/1.txt"], message(), ADA)
    assert sorted(path.name for path in packs.glob("*.keep")) == sorted(
        set(keeps) - {"pack-dead.keep"}
    )


def test_with_packs_near_gits_limit_a_commit_is_written_as_files(git_repo: Path) -> None:
    """git's repacks held back (a user's gc running): a decision's objects are written as files,
    as `git commit` writes them, so that the packs never reach gc.autoPackLimit (50)."""
    pack_dir = git_repo / ".git" / "objects" / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)
    for number in range(LOOSE_FROM_PACKS):
        release(pack_dir, write_pack(pack_dir, [packed("blob", f"old {number}\n".encode())]))
    (git_repo / ".git" / "gc.pid").write_text(f"{os.getpid()} {socket.gethostname()}")
    write(git_repo, "fb/1.txt", "a decision\n")
    with GitRepo(git_repo) as repo:
        repo.commit_paths(["fb/1.txt"], message(), ADA)
    head = git(git_repo, "rev-parse", "HEAD").strip()
    assert len(list(pack_dir.glob("*.pack"))) == LOOSE_FROM_PACKS
    assert (git_repo / ".git" / "objects" / head[:2] / head[2:]).is_file()
    (git_repo / ".git" / "gc.pid").unlink()
    assert git(git_repo, "show", "HEAD:fb/1.txt") == "a decision\n"
    assert git(git_repo, "fsck", "--strict", "--no-dangling") == ""


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid


# Read as the module is collected: each test runs without FEEDBACKD_ variables (conftest.py).
MANY_DECISIONS = int(os.environ.get("FEEDBACKD_MANY_DECISIONS", "2000"))


@pytest.mark.slow
def test_the_pack_count_stays_bounded_over_thousands_of_decisions_while_gc_races(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,000 decisions, a user's `git gc` started every few hundred: git's repacks keep the
    packs few (under git's own `gc.autoPackLimit`, 50, which would start a full gc from the
    user's next commit), every decision is on the branch, and git finds the repository whole.
    The decisions come in runs of 100 whose index update is one, as on a big site's burst (a
    git process per decision would be most of this test's time, and is not what it is about).

    2,000 decisions start git's repack dozens of times (each time REPACK_AT packs are there),
    the helpers afresh after every few, and up to five gcs meanwhile: each race happens many
    times over, as in the 5,000 this test once made; FEEDBACKD_MANY_DECISIONS makes more."""
    monkeypatch.setattr(commit, "INDEX_ONCE_BYTES", 0)
    decisions = MANY_DECISIONS
    most, gcs = 0, []
    packs = git_repo / ".git" / "objects" / "pack"
    kept = GitBatchKeeper()
    with GitRepo(git_repo, kept=kept, lock_wait_s=20) as repo:
        for run in range(0, decisions, 100):
            with repo.holding(repo.settled_head(), index_once=True):
                for number in range(run, min(run + 100, decisions)):
                    rel = f"fb/{number // 100:02d}/{number % 100:02d}.txt"
                    write(git_repo, rel, f"decision {number}\n")
                    commit_past_gcs_locks(repo, rel)
                    most = max(most, len(list(packs.glob("*.pack"))))
            gcs = [gc for gc in gcs if gc.poll() is None]
            if run % 400 == 0 and not gcs:
                gcs.append(subprocess.Popen(["git", "gc", "--quiet"], cwd=git_repo))
    kept.close()
    for gc in gcs:
        gc.wait(60)
    assert most < 50, most
    assert git(git_repo, "rev-list", "--count", "HEAD").strip() == str(decisions + 1)
    assert git(git_repo, "fsck", "--strict", "--no-dangling") == ""
    assert git(git_repo, "status", "--porcelain") == ""


def commit_past_gcs_locks(repo: GitRepo, rel: str) -> None:
    """Commit `rel`, again if `git gc` held the branch's lock past the second the move of HEAD
    waits for it (on a loaded machine): the daemon's next pass does the same."""
    for attempt in range(1, 6):
        try:
            repo.commit_paths([rel], message(), ADA)
            return
        except GitError as error:
            assert "lock" in str(error) and attempt < 5, error

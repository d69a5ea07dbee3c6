"""Commits built without an index, through git's long-lived helpers (edges/git/batch.py,
edges/git/tree.py): the same trees `git add` + `git commit` make, a handful of git processes per
commit whatever the size of the repository, and helpers that survive what users do to git.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from feedbackd.core.people import FEEDBACKD_PERSON
from feedbackd.core.workspacepaths import ITEM_FOLDERS
from feedbackd.edges.git import tree as tree_module
from feedbackd.edges.git.batch import GitBatch, GitBatchKeeper, GitObject, KeptObjects
from feedbackd.edges.git.headfile import head_commit
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.git.tree import Entry, commit_object, parse_tree, tree_id, tree_listing
from tests.conftest import git
from tests.git_kit import ADA, counting_git, message, write


def reference_tree(tmp_path: Path, source: Path, paths: list[str]) -> str:
    """The tree git itself makes of the same change: `git add -A -- paths` in a copy."""
    copy = tmp_path / "reference"
    shutil.copytree(source, copy, symlinks=True)
    git(copy, "add", "-A", "--", *[rel for rel in paths if os.path.lexists(source / rel)])
    git(copy, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", "_data/agents/old")
    git(copy, "rm", "-q", "--cached", "--ignore-unmatch", "--", "_data/agents/w/queue/a.json")
    return git(copy, "write-tree").strip()


def test_the_tree_is_the_one_git_add_makes(tmp_path: Path, git_repo: Path) -> None:
    write(git_repo, ".gitignore", "*.error\n")
    write(git_repo, "_data/agents/w/queue/a.json", "{}\n")
    write(git_repo, "_data/agents/w/queue/b.json", "{}\n")
    write(git_repo, "_data/agents/old/feedback.json", "[]\n")
    write(git_repo, "notes/item", "a file, soon a folder\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "start")
    # every kind of change at once
    os.rename(git_repo / "_data/agents/w/queue/a.json", git_repo / "_data/agents/w/a.json")
    write(git_repo, "_data/agents/w/queue/b.json", '{"edited": true}\n')
    write(git_repo, "_data/agents/w/approved/deep/new.json", "{}\n")
    shutil.rmtree(git_repo / "_data/agents/old")
    write(git_repo, "tool.sh", "#!/bin/sh\n")
    (git_repo / "tool.sh").chmod(0o755)
    os.symlink("tool.sh", git_repo / "link")
    (git_repo / "notes/item").unlink()
    write(git_repo, "notes/item/inside.md", "now a folder\n")
    write(git_repo, "folder/kept.json", "{}\n")
    write(git_repo, "folder/skipped.json.error", "ignored\n")
    paths = [
        "_data/agents/w/queue/a.json",
        "_data/agents/w/a.json",
        "_data/agents/w/queue/b.json",
        "_data/agents/w/approved/deep/new.json",
        "_data/agents/old",
        "tool.sh",
        "link",
        "notes/item",
        "folder",
        "never-existed.json",
    ]
    expected = reference_tree(tmp_path, git_repo, paths)

    with GitRepo(git_repo) as repo:
        repo.commit_paths(paths, message(), ADA)

    assert git(git_repo, "rev-parse", "HEAD^{tree}").strip() == expected
    assert git(git_repo, "status", "--porcelain") == ""
    assert git(git_repo, "fsck", "--strict") == ""


def test_files_with_odd_names_are_committed_as_git_add_commits_them(
    tmp_path: Path, git_repo: Path
) -> None:
    names = [
        "bad id.json",
        'say "hi".json',
        "tab\there.json",
        "caf\u00e9.json",
        "latin1 \udce9.json",
    ]
    paths = [f"_data/agents/w/memory/{name}" for name in names]
    for rel in paths:
        (git_repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (git_repo / rel).write_text("{}\n")  # a name that is not UTF-8 is written as its bytes
    expected = reference_tree(tmp_path, git_repo, paths)
    with GitRepo(git_repo) as repo:
        repo.commit_paths(paths, message(), ADA)
        assert [repo.file_at_head(rel) for rel in paths] == [b"{}\n"] * len(paths)
    assert git(git_repo, "rev-parse", "HEAD^{tree}").strip() == expected
    assert git(git_repo, "status", "--porcelain") == ""


def test_committed_paths_need_no_refresh_in_the_users_index(git_repo: Path) -> None:
    """The index entries of the committed files carry their stat data: commands that trust the
    index without refreshing it (`diff-files`, a sync's `read-tree -m -u`) see no change."""
    write(git_repo, "_data/agents/w/feedback.json", "[]\n")
    with GitRepo(git_repo) as repo:
        repo.commit_paths(["_data/agents/w/feedback.json"], message(), ADA)
        write(git_repo, "_data/agents/w/feedback.json", '[{"n": 1}]\n')
        repo.commit_paths(["_data/agents/w/feedback.json"], message(), ADA)
    assert git(git_repo, "diff-files", "--name-only") == ""
    assert git(git_repo, "diff", "--cached", "--name-only") == ""


def test_a_file_changed_after_it_was_stored_stays_unstaged(git_repo: Path) -> None:
    """If a curator saves a file again between its commit and the index update, the index holds
    what was committed, and the new save shows as an unstaged change."""
    rel = "_data/agents/w/approved/a.json"
    write(git_repo, rel, '{"v": 1}\n')
    with GitRepo(git_repo) as repo:
        sha = repo.commit_paths([rel], message(), ADA)
        assert sha is not None
        commits = repo._commits  # the step after the commit, with the file saved again meanwhile
        write(git_repo, rel, '{"v": 2, "saved": "again"}\n')
        change = commits._work_tree_change([rel], None)
        write(git_repo, rel, '{"v": 3, "saved": "once more"}\n')
        commits.update_user_index(sha, [rel], change)
    assert git(git_repo, "show", f":{rel}") == '{"v": 1}\n'
    assert git(git_repo, "diff", "--name-only") == f"{rel}\n"


def test_filters_of_gitattributes_apply_as_with_git_add(git_repo: Path) -> None:
    write(git_repo, ".gitattributes", "*.md text eol=lf\n")
    (git_repo / "a.md").write_bytes(b"line one\r\nline two\r\n")
    with GitRepo(git_repo, kept=(kept := GitBatchKeeper())) as repo:
        repo.commit_paths([".gitattributes", "a.md"], message(), ADA)
    assert git(git_repo, "cat-file", "blob", "HEAD:a.md") == "line one\nline two\n"
    # Changed attributes are read again by the helpers kept from the last commit.
    write(git_repo, ".gitattributes", "*.md -text\n")
    (git_repo / "b.md").write_bytes(b"kept\r\n")
    with GitRepo(git_repo, kept=kept) as repo:
        repo.commit_paths([".gitattributes", "b.md"], message(), ADA)
    out = subprocess.run(
        ["git", "cat-file", "blob", "HEAD:b.md"], cwd=git_repo, capture_output=True, check=True
    )
    assert out.stdout == b"kept\r\n"
    kept.close()


def test_a_commit_starts_a_handful_of_git_processes(tmp_path: Path, git_repo: Path) -> None:
    """One short git command per commit (update-index: the objects are read and stored and HEAD
    moved in process), whatever the number of commits or files."""
    wrapper, log = counting_git(tmp_path / "bin")
    for number in range(300):
        write(git_repo, f"docs/d{number:03d}/note.json", "{}\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "300 files")
    kept = GitBatchKeeper()
    env = {"GIT_PYTHON_GIT_EXECUTABLE": str(wrapper)}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        for number in range(10):
            write(git_repo, f"_data/agents/w/approved/d{number}.json", "{}\n")
            write(git_repo, "_data/agents/w/feedback.json", f'[{{"n": {number}}}]\n')
            with GitRepo(git_repo, kept=kept) as repo:
                paths = [f"_data/agents/w/approved/d{number}.json", "_data/agents/w/feedback.json"]
                assert repo.commit_paths(paths, message(), ADA) is not None
    kept.close()
    commands = [line.split()[0] for line in log.read_text().splitlines()]
    helpers = [name for name in commands if name in ("cat-file", "hash-object", "mktree")]
    assert helpers == []
    assert sorted(set(commands)) == ["update-index"]
    assert len(commands) - len(helpers) == 10, commands
    assert git(git_repo, "log", "--format=%s", "-11").splitlines()[-1] == "300 files"


def test_each_folder_is_read_once_per_commit(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decision names every form its item may take (`x.json`, `x.yaml`, ...), mostly absent:
    the folders on their way are read once, not once per name."""
    write(git_repo, "_data/agents/w/queue/x.json", "{}\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "a draft")
    os.renames(
        git_repo / "_data/agents/w/queue/x.json", git_repo / "_data/agents/w/approved/x.json"
    )
    names = [
        f"_data/agents/w/{folder}/x{suffix}"
        for folder in ITEM_FOLDERS
        for suffix in (".json", ".yaml", ".yml", ".md")
    ]
    asked: list[str] = []
    original = GitBatch.read

    def counted(batch: GitBatch, name: str) -> GitObject | None:
        asked.append(name)
        return original(batch, name)

    monkeypatch.setattr(GitBatch, "read", counted)
    with GitRepo(git_repo) as repo:
        assert repo.commit_paths(names, message(), ADA) is not None
    assert sorted(asked) == sorted(set(asked)), asked
    assert git(git_repo, "ls-tree", "-r", "--name-only", "HEAD", "_data").split() == [
        "_data/agents/w/approved/x.json"
    ]


def test_a_burst_in_one_big_folder_keeps_a_bounded_number_of_parsed_entries(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each decision makes a new version of its folder's tree; a burst of them in a folder
    of hundreds of files must not keep every version parsed."""
    monkeypatch.setattr(tree_module, "ENTRIES_KEPT", 1000)
    for number in range(400):
        write(git_repo, f"approved/old-{number:03d}.json", "{}\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "a big folder")
    tree = git(git_repo, "rev-parse", "HEAD^{tree}").strip()
    blob = git(git_repo, "rev-parse", "HEAD:approved/old-000.json").strip()
    batch = GitBatch(git_repo, git_repo / ".git")
    editor = tree_module.TreeEditor(batch)
    try:
        for number in range(12):
            change = {(b"approved", b"new-%02d.json" % number): Entry(b"100644", blob)}
            edited = editor.edit(tree, change)
            assert edited is not None
            tree = edited
            assert editor.entries_kept <= 1000 + 400 + number + 1  # the budget + the newest
    finally:
        batch.close()
    listed = git(git_repo, "ls-tree", "--name-only", tree, "approved/")
    assert len(listed.split()) == 412


def test_a_helper_killed_under_us_is_started_again(git_repo: Path) -> None:
    kept = GitBatchKeeper()
    for number in range(3):
        write(git_repo, f"f{number}.json", "{}\n")
        with GitRepo(git_repo, kept=kept) as repo:
            assert repo.commit_paths([f"f{number}.json"], message(), ADA) is not None
        for pid in helper_pids():
            os.kill(pid, signal.SIGKILL)
    kept.close()
    names = git(git_repo, "ls-tree", "--name-only", "HEAD").split()
    assert [name for name in names if name.startswith("f")] == ["f0.json", "f1.json", "f2.json"]


def test_a_commit_follows_a_head_the_user_moved(git_repo: Path) -> None:
    kept = GitBatchKeeper()
    write(git_repo, "ours.json", "{}\n")
    with GitRepo(git_repo, kept=kept) as repo:
        repo.commit_paths(["ours.json"], message(), ADA)
    write(git_repo, "theirs.txt", "the user's own commit\n")
    git(git_repo, "add", "theirs.txt")
    git(git_repo, "commit", "-q", "-m", "by hand")
    git(git_repo, "pack-refs", "--all")  # and the branch moved into packed-refs
    write(git_repo, "ours.json", '{"again": 1}\n')
    with GitRepo(git_repo, kept=kept) as repo:
        repo.commit_paths(["ours.json"], message(), ADA)
    kept.close()
    assert git(git_repo, "log", "--format=%s", "-3").splitlines()[1] == "by hand"
    assert "theirs.txt" in git(git_repo, "ls-tree", "--name-only", "HEAD").split()


def test_a_commit_object_is_the_one_commit_tree_makes(git_repo: Path) -> None:
    tree = git(git_repo, "write-tree").strip()
    head = git(git_repo, "rev-parse", "HEAD").strip()
    when = 1_796_277_600.7
    text = message("approve", "w", "qi-1, 1 correction (title)")
    content = commit_object(tree, [head], ADA, FEEDBACKD_PERSON, text, when)
    batch = GitBatch(git_repo, git_repo / ".git")
    try:
        ours = batch.store_commit(content)
    finally:
        batch.close()
    stamp = time.strftime("%s %z", time.localtime(when))
    env = {
        "GIT_AUTHOR_NAME": ADA.name,
        "GIT_AUTHOR_EMAIL": ADA.email,
        "GIT_AUTHOR_DATE": stamp,
        "GIT_COMMITTER_NAME": FEEDBACKD_PERSON.name,
        "GIT_COMMITTER_EMAIL": FEEDBACKD_PERSON.email,
        "GIT_COMMITTER_DATE": stamp,
    }
    theirs = subprocess.run(
        ["git", "commit-tree", "--no-gpg-sign", tree, "-p", head],
        cwd=git_repo, input=text.encode(), capture_output=True, check=True,
        env={**os.environ, **env},
    ).stdout.decode().strip()  # fmt: skip
    assert ours == theirs
    assert git(git_repo, "cat-file", "-t", ours).strip() == "commit"
    assert not list((git_repo / ".git").glob("feedbackd-commit-*"))  # the handover is gone


def test_tree_entries_read_back_as_written() -> None:
    entries = {
        b"b.json": Entry(b"100644", "a" * 40),
        b"a folder": Entry(b"40000", "b" * 40),
        b"run.sh": Entry(b"100755", "c" * 40),
    }
    raw = b"".join(
        b"%s %s\0%s" % (entry.mode, name, bytes.fromhex(entry.sha))
        for name, entry in entries.items()
    )
    assert parse_tree(raw) == entries
    assert tree_listing({b"a folder": entries[b"a folder"]}) == (
        b"40000 tree " + b"b" * 40 + b"\ta folder\0"
    )


def test_a_trees_id_is_worked_out_as_git_does(git_repo: Path) -> None:
    """Git sorts a folder's name as if it ended in `/`: `x` the folder comes after `x.json`
    and `x-1` but before `x0`. Every new tree's id is worked out before git stores it."""

    def fed(args: list[str], text: bytes) -> str:
        done = subprocess.run(["git", *args], cwd=git_repo, input=text, capture_output=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.decode().strip()

    blob = fed(["hash-object", "-w", "--stdin"], b"{}\n")
    inner = fed(["mktree"], f"100644 blob {blob}\tin.json\n".encode())
    entries = {
        b"x0": Entry(b"100644", blob),
        b"x": Entry(b"40000", inner),
        b"x.json": Entry(b"100644", blob),
        b"x-1": Entry(b"100755", blob),
        "été notes".encode(): Entry(b"100644", blob),
        b"link": Entry(b"120000", blob),
    }
    assert tree_id(entries, 20) == fed(["mktree", "-z"], tree_listing(entries))
    batch = GitBatch(git_repo, git_repo / ".git")
    try:
        assert batch.store_trees([tree_listing(entries)]) == [tree_id(entries, 20)]
    finally:
        batch.close()


# --- helpers ------------------------------------------------------------------------------------
def helper_pids() -> list[int]:
    """This test process's long-lived git helpers."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and len(argv) > 1 and argv[1] in (b"cat-file", b"mktree"):
            found.append(int(entry.name))
    return found


def test_closing_one_batch_leaves_anothers_commit_in_the_making(git_repo: Path) -> None:
    """Two batches of one repository in one thread (a web request's and a pass's, or one being
    collected as garbage in the middle of another's commit): closing one never removes the
    file the other hands its next commit object to git through."""
    tree = git(git_repo, "write-tree").strip()
    head = git(git_repo, "rev-parse", "HEAD").strip()
    content = commit_object(tree, [head], ADA, FEEDBACKD_PERSON, message("sync", "w", "x"), 0.0)
    first, second = GitBatch(git_repo, git_repo / ".git"), GitBatch(git_repo, git_repo / ".git")
    try:
        first.store_commit(content)
        second.store_commit(content)
        second.close()
        assert len(list((git_repo / ".git").glob("feedbackd-commit-*"))) == 1
    finally:
        first.close()
        second.close()
    assert not list((git_repo / ".git").glob("feedbackd-commit-*"))


def test_head_is_read_from_gits_own_files_as_git_reads_it(tmp_path: Path, git_repo: Path) -> None:
    """A loose branch and a detached HEAD are read from the files; a packed or unborn branch and
    a linked worktree are left to git. Each answer is git's own."""
    git_dir = git_repo / ".git"
    head = git(git_repo, "rev-parse", "HEAD").strip()
    assert head_commit(git_dir) == head
    git(git_repo, "commit", "-q", "--allow-empty", "-m", "the user's")
    assert head_commit(git_dir) == git(git_repo, "rev-parse", "HEAD").strip()
    git(git_repo, "pack-refs", "--all")  # the branch now lives in packed-refs alone
    assert head_commit(git_dir) is None
    batch = GitBatch(git_repo, git_dir)
    try:
        found = batch.read("HEAD")
        assert found is not None and found.sha == git(git_repo, "rev-parse", "HEAD").strip()
        git(git_repo, "checkout", "-q", "--detach", head)
        assert head_commit(git_dir) == head
        found = batch.read("HEAD:")
        assert found is not None and found.sha == git(git_repo, "rev-parse", "HEAD^{tree}").strip()
        git(git_repo, "checkout", "-q", "--orphan", "unborn")
        assert head_commit(git_dir) is None and batch.read("HEAD") is None
    finally:
        batch.close()
    git(git_repo, "worktree", "add", "-q", "--detach", str(tmp_path / "linked"), head)
    assert head_commit(git_dir / "worktrees" / "linked") is None


def test_trees_named_by_a_commit_are_read_once() -> None:
    """A tree or commit read by a name that fixes it is answered again without git; a name
    that can change (HEAD, a branch) is always read, and so is a blob."""
    asked: list[str] = []
    objects = {
        "a" * 40 + ":docs": GitObject("b" * 40, "tree", b"t"),
        "a" * 40 + ":docs/x": GitObject("c" * 40, "blob", b"x"),
        "main": GitObject("a" * 40, "commit", b"tree ..."),
    }

    def read(name: str) -> GitObject | None:
        asked.append(name)
        return objects.get(name)

    kept = KeptObjects(limit_bytes=64)
    for _ in range(3):
        for name in objects:
            assert kept.get(name, read) == objects[name]
    assert asked.count("a" * 40 + ":docs") == 1
    assert asked.count("a" * 40 + ":docs/x") == 3 and asked.count("main") == 3


def test_kept_objects_stay_within_their_bytes() -> None:
    """The oldest trees go first once the kept bytes pass the limit; one tree of more than a
    quarter of it is never kept."""
    kept = KeptObjects(limit_bytes=200)
    reads: list[str] = []

    def read(name: str) -> GitObject:
        reads.append(name)
        return GitObject("f" * 40, "tree", b"x" * (30 if name.endswith("small") else 60))

    names = [f"{n:040x}:small" for n in range(7)]  # 7 x 30 bytes: the first must go
    for name in names:
        kept.get(name, read)
    kept.get(names[-1], read)
    kept.get(names[0], read)
    assert reads == [*names, names[0]]
    big = f"{9:040x}:big"
    kept.get(big, read)
    kept.get(big, read)
    assert reads.count(big) == 2


def test_an_absent_file_found_by_a_read_ahead_is_answered_without_git() -> None:
    """What a read ahead found is kept, an absent file too, for a name fixed by a commit; a
    name that can change is never kept."""
    asked: list[str] = []
    kept = KeptObjects(limit_bytes=1024)
    absent, present = "a" * 40 + ":gone.json", "a" * 40 + ":here.json"
    kept.keep(absent, None)
    kept.keep(present, GitObject("c" * 40, "blob", b"[]"))
    kept.keep("HEAD:gone.json", None)

    def read(name: str) -> GitObject | None:
        asked.append(name)
        return GitObject("d" * 40, "blob", b"{}")

    assert kept.get(absent, read) is None
    assert kept.get(present, read) == GitObject("c" * 40, "blob", b"[]")
    assert kept.get("HEAD:gone.json", read) == GitObject("d" * 40, "blob", b"{}")
    assert asked == ["HEAD:gone.json"]


def test_files_read_ahead_at_head_follow_head_when_it_moves(
    tmp_path: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One git process reads many agents' files at HEAD; file_at_head then answers them with
    no git process, and once HEAD moves it answers what the new HEAD holds."""
    write(git_repo, "_data/agents/a/feedback.json", "[1]\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "a has feedback")
    paths = [f"_data/agents/{name}/feedback.json" for name in ("a", "b", "c")]
    wrapper, log = counting_git(tmp_path / "bin")
    monkeypatch.setenv("GIT_PYTHON_GIT_EXECUTABLE", str(wrapper))
    with GitRepo(git_repo) as repo:
        repo.read_ahead_at_head(paths)
        started = log.read_text().splitlines()
        assert [repo.file_at_head(path) for path in paths] == [b"[1]\n", None, None]
        assert log.read_text().splitlines() == started  # answered from what was read ahead
        assert started == ["cat-file --batch --buffer"]
        write(git_repo, "_data/agents/b/feedback.json", "[2]\n")
        git(git_repo, "add", "-A")
        git(git_repo, "commit", "-q", "-m", "b has feedback")
        assert [repo.file_at_head(path) for path in paths] == [b"[1]\n", b"[2]\n", None]


def test_a_head_git_would_read_otherwise_is_left_to_git(git_repo: Path) -> None:
    """A ref file that is not a lowercase commit id alone (a symbolic ref, a stray word), and
    HEAD naming something other than a branch, are asked of git."""
    git_dir = git_repo / ".git"
    head = git(git_repo, "rev-parse", "HEAD").strip()
    branch = git_dir / "refs" / "heads" / "main"
    for content in (f"{head.upper()}\n", "ref: refs/heads/other\n", f"{head}\nmore\n", ""):
        branch.write_text(content)
        assert head_commit(git_dir) is None, content
    branch.write_text(f"{head}\n")
    assert head_commit(git_dir) == head
    for content in ("ref: refs/tags/v1\n", "ref: refs/heads/../../config\n", "nonsense\n"):
        (git_dir / "HEAD").write_text(content)
        assert head_commit(git_dir) is None, content
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")

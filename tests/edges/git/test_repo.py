"""The workspace repository: exact-path commits, the user's index untouched, history.

Stale locks are tested in test_locks.py, the remote in test_remote.py and
tests/app/test_remotesync.py.
"""

from __future__ import annotations

import gc
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from feedbackd.core.commitmsg import build_message
from feedbackd.core.errors import GitError, WorkspaceError
from feedbackd.core.people import Person
from feedbackd.edges.git.repo import GitRepo
from tests.conftest import git
from tests.git_kit import ADA, commit_count, committed_names, message, write


@pytest.fixture
def repo(git_repo: Path) -> Iterator[GitRepo]:
    with GitRepo(git_repo, lock_wait_s=2) as opened:
        yield opened


# --- committing exactly the given paths ---------------------------------------------------------
def test_commit_takes_only_the_given_paths_and_leaves_the_users_index_alone(
    repo: GitRepo, git_repo: Path
) -> None:
    write(git_repo, "staged.txt", "one\n")
    write(git_repo, "unstaged.txt", "one\n")
    git(git_repo, "add", "staged.txt", "unstaged.txt")
    git(git_repo, "commit", "-q", "-m", "user files")
    write(git_repo, "staged.txt", "staged change\n")
    git(git_repo, "add", "staged.txt")
    write(git_repo, "unstaged.txt", "unstaged change\n")
    write(git_repo, "untracked.txt", "new\n")
    staged_entry = git(git_repo, "ls-files", "-s", "staged.txt")
    write(git_repo, "_data/agents/writer/feedback.json", "[]\n")

    sha = repo.commit_paths(["_data/agents/writer/feedback.json"], message(), ADA)

    assert sha == git(git_repo, "rev-parse", "HEAD").strip()
    assert committed_names(git_repo) == ["_data/agents/writer/feedback.json"]
    assert git(git_repo, "diff", "--cached", "--name-only").split() == ["staged.txt"]
    assert git(git_repo, "diff", "--name-only").split() == ["unstaged.txt"]
    assert git(git_repo, "ls-files", "-s", "staged.txt") == staged_entry
    assert git(git_repo, "show", ":staged.txt") == "staged change\n"
    assert git(git_repo, "status", "--porcelain").splitlines() == [
        "M  staged.txt",
        " M unstaged.txt",
        "?? untracked.txt",
    ]


def test_a_path_the_user_had_staged_differently_follows_the_commit(
    repo: GitRepo, git_repo: Path
) -> None:
    write(git_repo, "feedback.json", "[1]\n")
    git(git_repo, "add", "feedback.json")
    write(git_repo, "feedback.json", "[1, 2]\n")
    assert repo.commit_paths(["feedback.json"], message(), ADA) is not None
    assert git(git_repo, "status", "--porcelain") == ""
    assert git(git_repo, "show", "HEAD:feedback.json") == "[1, 2]\n"


def test_a_move_from_queue_to_approved_is_committed_as_a_rename(
    repo: GitRepo, git_repo: Path
) -> None:
    write(git_repo, "queue/x.json", '{"contentData": {"title": "A draft"}}\n')
    repo.commit_paths(["queue/x.json"], message(), ADA)
    (git_repo / "approved").mkdir()
    (git_repo / "queue/x.json").rename(git_repo / "approved/x.json")

    sha = repo.commit_paths(["queue/x.json", "approved/x.json"], message("approve"), ADA)

    assert sha is not None
    status = git(git_repo, "show", "-M", "--name-status", "--format=", sha).split()
    assert status == ["R100", "queue/x.json", "approved/x.json"]
    assert git(git_repo, "status", "--porcelain") == ""


def test_a_deleted_file_is_committed_as_a_deletion(repo: GitRepo, git_repo: Path) -> None:
    write(git_repo, "inbox/r.json", "{}\n")
    repo.commit_paths(["inbox/r.json"], message(), ADA)
    (git_repo / "inbox/r.json").unlink()
    sha = repo.commit_paths(["inbox/r.json"], message(), ADA)
    assert sha is not None
    assert git(git_repo, "show", "--name-status", "--format=", sha).split() == ["D", "inbox/r.json"]


def test_nothing_to_commit_makes_no_commit(repo: GitRepo, git_repo: Path) -> None:
    before = repo.head()
    assert repo.commit_paths(["README.md"], message(), ADA) is None
    assert repo.commit_paths(["never/existed.json", "gone.md"], message(), ADA) is None
    assert repo.commit_paths([], message(), ADA) is None
    assert repo.head() == before
    assert commit_count(git_repo) == 1


def test_paths_that_neither_exist_nor_are_tracked_are_ignored(
    repo: GitRepo, git_repo: Path
) -> None:
    write(git_repo, "queue/a.json", "{}\n")
    paths = ["queue/a.json", "queue/a.yaml", "queue/a.md", "queue/a.json"]
    sha = repo.commit_paths(paths, message(), ADA)
    assert sha is not None
    assert committed_names(git_repo) == ["queue/a.json"]


def test_file_names_are_taken_literally_not_as_patterns(repo: GitRepo, git_repo: Path) -> None:
    write(git_repo, "q/a*.json", "star\n")
    write(git_repo, "q/abc.json", "other\n")
    repo.commit_paths(["q/a*.json"], message(), ADA)
    assert committed_names(git_repo) == ["q/a*.json"]


def test_first_commit_on_a_branch_with_no_commits(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    GitRepo.init(root)
    GitRepo.init(root)  # again: nothing happens
    write(root, "_data/agents/a/queue/q.json", "{}\n")
    with GitRepo(root) as repo:
        assert repo.head() is None
        assert repo.log() == []
        assert repo.file_at_first_add("_data/agents/a/queue/q.json") is None
        assert repo.file_at_head("_data/agents/a/queue/q.json") is None
        assert repo.commit_paths(["missing.json"], message(), ADA) is None
        sha = repo.commit_paths(["_data/agents/a/queue/q.json"], message(), ADA)
        assert sha is not None and repo.head() == sha
    assert git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert commit_count(root) == 1
    assert git(root, "status", "--porcelain") == ""


def test_author_is_the_curator_and_committer_is_feedbackd(git_repo: Path) -> None:
    write(git_repo, "f.json", "[]\n")
    with GitRepo(git_repo) as repo:
        repo.commit_paths(["f.json"], message(), ADA)
    identities = git(git_repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip()
    assert identities == "Ada Curator <ada@example.org>|feedbackd <feedbackd@localhost>"

    write(git_repo, "f.json", "[1]\n")
    with GitRepo(git_repo, committer=Person("Build Bot", "bot@example.org")) as repo:
        repo.commit_paths(["f.json"], message(), Person("Bo", "bo@example.org"))
    identities = git(git_repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip()
    assert identities == "Bo <bo@example.org>|Build Bot <bot@example.org>"


def test_the_message_is_stored_exactly(repo: GitRepo, git_repo: Path) -> None:
    text = build_message("approve", "w", "qi-1, 1 correction (title)", body=['- title: "a" → "b"'])
    write(git_repo, "f.json", "[]\n")
    repo.commit_paths(["f.json"], text, ADA)
    assert git(git_repo, "log", "-1", "--format=%B") == text + "\n"
    assert "feedbackd: approve(w)" in git(git_repo, "reflog", "-1")


def test_a_message_too_long_for_a_command_line_goes_in_whole(repo: GitRepo, git_repo: Path) -> None:
    body = [f'- field{n}: "{"o" * 100}" → "{"c" * 100}"' for n in range(2000)]
    text = build_message("approve", "w", "qi-1, 2000 corrections", body=body)
    assert len(text) > 400_000
    write(git_repo, "f.json", "[]\n")
    repo.commit_paths(["f.json"], text, ADA)
    assert git(git_repo, "log", "-1", "--format=%B") == text + "\n"


def test_forged_trailers_in_file_text_stay_harmless(repo: GitRepo, git_repo: Path) -> None:
    forged = "qi-1\nFeedback-Event: forged\n\nFeedback-Event: forged"
    text = build_message(
        "approve", "w", forged, body=[forged], trailers=[("Feedback-Item", forged)]
    )
    write(git_repo, "f.json", "[]\n")
    repo.commit_paths(["f.json"], text, ADA)
    body = git(git_repo, "log", "-1", "--format=%B")
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"], input=body, text=True, capture_output=True
    ).stdout.splitlines()
    assert [line for line in parsed if line.startswith("Feedback-Event")] == [
        "Feedback-Event: approve"
    ]
    assert [entry.event for entry in repo.log()] == ["approve"]


@pytest.mark.parametrize(
    "bad", ["../outside.json", "/etc/passwd", ".git/config", "", ".", "a/../../b", "a\0b"]
)
def test_paths_outside_the_workspace_are_refused(repo: GitRepo, bad: str) -> None:
    with pytest.raises(WorkspaceError, match="not a path inside the workspace"):
        repo.commit_paths([bad], message(), ADA)
    with pytest.raises(WorkspaceError):
        repo.file_at_head(bad)


def test_a_git_failure_says_what_failed_and_how_to_fix_it(repo: GitRepo, git_repo: Path) -> None:
    """A branch lock left by a git that is still running (or crashed): the commit cannot move
    HEAD, and says which lock to wait for."""
    write(git_repo, "x.json", "{}\n")
    branch = git(git_repo, "symbolic-ref", "HEAD").strip()
    (git_repo / ".git" / f"{branch}.lock").write_text("")
    before = git(git_repo, "rev-parse", "HEAD")
    with pytest.raises(GitError) as caught:
        repo.commit_paths(["x.json"], message(), ADA)
    assert caught.value.code == "git_error"
    assert "could not move HEAD" in caught.value.message
    assert ".lock" in caught.value.message
    assert "remove the .lock file" in caught.value.hint
    assert git(git_repo, "rev-parse", "HEAD") == before


def test_a_folder_that_is_not_a_repository_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with (
        pytest.raises(GitError, match="not a git repository") as caught,
        GitRepo(tmp_path / "plain"),
    ):
        pass
    assert "feedbackd init" in caught.value.hint
    with pytest.raises(GitError), GitRepo(tmp_path / "missing"):
        pass


def test_using_the_repository_outside_its_with_block_is_a_bug(git_repo: Path) -> None:
    with pytest.raises(RuntimeError, match="with"):
        GitRepo(git_repo).head()


def test_is_repo_means_the_top_of_its_own_work_tree(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "sub").mkdir()
    assert GitRepo.is_repo(git_repo)
    assert not GitRepo.is_repo(git_repo / "sub")
    assert not GitRepo.is_repo(tmp_path / "missing")
    GitRepo.init(git_repo / "sub")  # a workspace nested in another repository gets its own
    assert GitRepo.is_repo(git_repo / "sub")


# --- reading ------------------------------------------------------------------------------------
def test_file_at_first_add_is_the_draft_as_first_committed(repo: GitRepo, git_repo: Path) -> None:
    rel = "queue/qi-1.json"
    write(git_repo, rel, '{"title": "draft"}\n')
    repo.commit_paths([rel], message(), ADA)
    write(git_repo, rel, '{"title": "edited"}\n')
    repo.commit_paths([rel], message(), ADA)
    assert repo.file_at_first_add(rel) == b'{"title": "draft"}\n'
    assert repo.file_at_head(rel) == b'{"title": "edited"}\n'
    assert repo.file_at_first_add("queue/never.json") is None
    assert repo.file_at_head("queue") is None  # a folder is not a file

    (git_repo / rel).unlink()
    repo.commit_paths([rel], message(), ADA)
    assert repo.file_at_head(rel) is None
    write(git_repo, rel, '{"title": "back in the queue"}\n')
    repo.commit_paths([rel], message(), ADA)
    assert repo.file_at_first_add(rel) == b'{"title": "back in the queue"}\n'


def test_files_at_last_add_answers_as_file_at_first_add_for_many(
    repo: GitRepo, git_repo: Path
) -> None:
    names = ["queue/qi-1.json", "queue/qi-2.yaml", "queue/qi 3.md", "queue/qi-4.json"]
    for number, rel in enumerate(names[:3]):
        write(git_repo, rel, f"draft {number}\n" + "x" * number * 1000)
        repo.commit_paths([rel], message(), ADA)
    write(git_repo, names[0], "edited\n")
    repo.commit_paths([names[0]], message(), ADA)
    (git_repo / names[1]).unlink()
    repo.commit_paths([names[1]], message(), ADA)
    write(git_repo, names[1], "back in the queue\n")
    repo.commit_paths([names[1]], message(), ADA)
    write(git_repo, "other/qi-1.json", "elsewhere\n")
    repo.commit_paths(["other/qi-1.json"], message(), ADA)
    found = repo.files_at_last_add("queue", [*names, "other/qi-1.json"])
    assert found == {
        rel: one for rel in names if (one := repo.file_at_first_add(rel)) is not None
    }  # fmt: skip
    assert found[names[0]] == b"draft 0\n" and found[names[1]] == b"back in the queue\n"
    assert names[3] not in found and "other/qi-1.json" not in found  # never added below queue/
    assert repo.files_at_last_add("queue", []) == {}


def test_commits_touching_a_file_and_its_content_in_each(repo: GitRepo, git_repo: Path) -> None:
    rel = "_data/agents/w/feedback.json"
    assert repo.commits_touching(rel) == []
    shas = []
    for version in ("[]\n", "[1]\n", "[1, 2]\n"):
        write(git_repo, rel, version)
        shas.append(repo.commit_paths([rel], message(), ADA))
    write(git_repo, "other.json", "{}\n")
    repo.commit_paths(["other.json"], message(), ADA)
    assert repo.commits_touching(rel) == shas[::-1]
    assert repo.commits_touching(rel, limit=2) == shas[:0:-1]
    assert [repo.file_at(sha, rel) for sha in shas] == [b"[]\n", b"[1]\n", b"[1, 2]\n"]
    assert repo.file_at(shas[0], "other.json") is None
    assert repo.file_at("HEAD~1", rel) == b"[1, 2]\n"


@pytest.mark.parametrize("bad", ["--output=/tmp/x", "-p", "", "a b", "HEAD\n", 42])
def test_file_at_refuses_what_is_not_a_revision(repo: GitRepo, bad: object) -> None:
    with pytest.raises(GitError, match="is not a commit"):
        repo.file_at(bad, "README.md")  # type: ignore[arg-type]


def test_set_config_writes_the_repository_config(repo: GitRepo, git_repo: Path) -> None:
    repo.set_config("merge.feedbackd.driver", "python -m feedbackd merge-driver %O %A %B %P")
    repo.set_config("merge.feedbackd.name", "feedbackd union merge")
    driver = git(git_repo, "config", "--local", "merge.feedbackd.driver").strip()
    assert driver == "python -m feedbackd merge-driver %O %A %B %P"
    for key, value in [("nosection", "v"), ("a.b", "two\nlines"), ("-x.y", "v"), ("a.1b", "v")]:
        with pytest.raises(GitError, match="refusing git config"):
            repo.set_config(key, value)


def test_file_contents_come_back_byte_for_byte(repo: GitRepo, git_repo: Path) -> None:
    data = b"no newline at end \xe2\x8f\x8e\r\n\x00binary"
    (git_repo / "blob.bin").write_bytes(data)
    repo.commit_paths(["blob.bin"], message(), ADA)
    assert repo.file_at_head("blob.bin") == data


def test_changed_paths_lists_what_differs_from_head_below_a_folder(
    repo: GitRepo, git_repo: Path
) -> None:
    write(git_repo, "_data/a/keep.json", "1\n")
    write(git_repo, "_data/a/edit.json", "1\n")
    write(git_repo, "_data/a/gone.json", "1\n")
    paths = ["_data/a/keep.json", "_data/a/edit.json", "_data/a/gone.json"]
    repo.commit_paths(paths, message(), ADA)
    write(git_repo, "_data/a/edit.json", "2\n")
    (git_repo / "_data/a/gone.json").unlink()
    write(git_repo, "_data/a/deep/new file.json", "1\n")
    write(git_repo, "outside.json", "1\n")
    expected = ["_data/a/deep/new file.json", "_data/a/edit.json", "_data/a/gone.json"]
    assert repo.listings.changed_paths("_data") == expected
    assert repo.listings.changed_paths("_data/b") == []
    assert "outside.json" in repo.listings.changed_paths("")


def test_user_identity_is_the_workspace_git_config(
    repo: GitRepo, git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert repo.user_identity() == Person("Ada Curator", "ada@example.org")  # as git would
    monkeypatch.delenv("GIT_AUTHOR_NAME")
    assert repo.user_identity() is None
    git(git_repo, "config", "user.name", "Cy Curator")
    assert repo.user_identity() is None  # an email is needed too
    git(git_repo, "config", "user.email", "cy@example.org")
    assert repo.user_identity() == Person("Cy Curator", "cy@example.org")
    git(git_repo, "config", "user.name", "Cy <odd>")
    assert repo.user_identity() is None


def test_log_lists_feedback_commits_newest_first_and_filters(
    repo: GitRepo, git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def commit_at(day: int, event: str, agent: str, **extra: str) -> str:
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"2026-04-{day:02d}T10:00:00+00:00")
        write(git_repo, f"{agent}-{day}.json", "[]\n")
        trailers = [(key.replace("_", "-"), value) for key, value in extra.items()]
        text = build_message(event, agent, f"day {day}", trailers=trailers)
        sha = repo.commit_paths([f"{agent}-{day}.json"], text, ADA)
        assert sha is not None
        return sha

    first = commit_at(
        1, "approve", "writer", Feedback_Item="qi-1", Feedback_Fields="title, excerpt"
    )
    commit_at(2, "rating", "seller")
    write(git_repo, "notes.md", "Feedback-Event: in a user's own commit\n")
    git(git_repo, "add", "notes.md")
    prose = "notes\n\nFeedback-Event: appears in this prose\nbut the paragraph is no trailer block"
    git(git_repo, "commit", "-q", "-m", prose)
    last = commit_at(3, "pricing", "seller", Price_Old="20", Price_New="19")

    everything = repo.log()
    assert [entry.event for entry in everything] == ["pricing", "rating", "approve"]
    assert everything[0].commit == last
    assert (everything[0].price_old, everything[0].price_new) == ("20", "19")
    assert everything[-1].commit == first
    assert everything[-1].fields == ["title", "excerpt"]
    assert everything[-1].item == "qi-1"
    assert everything[-1].curator == "Ada Curator <ada@example.org>"
    assert everything[-1].date == "2026-04-01T10:00:00.000Z"

    assert [entry.event for entry in repo.log(agent="seller")] == ["pricing", "rating"]
    assert repo.log(agent="nobody") == []
    since = datetime(2026, 4, 2, 10, 0, tzinfo=UTC)
    assert [entry.event for entry in repo.log(since=since)] == ["pricing", "rating"]
    assert [entry.event for entry in repo.log(agent="writer", since=since)] == []
    naive = datetime(2026, 4, 3, 10, 0)  # taken as UTC
    assert [entry.event for entry in repo.log(since=naive)] == ["pricing"]


# --- resources ----------------------------------------------------------------------------------
def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def child_processes() -> int:
    me = str(os.getpid())
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me:  # field 4: the parent's pid
            count += 1
    return count


@pytest.mark.slow
def test_200_commits_leave_no_processes_or_file_handles_behind(git_repo: Path) -> None:
    with GitRepo(git_repo) as warm:  # let one-time imports and caches settle first
        warm.head()
    gc.collect()  # what earlier tests in this process left to the collector goes first
    fds, children = open_fds(), child_processes()
    for round_ in range(4):
        with GitRepo(git_repo) as repo:
            for n in range(50):
                write(git_repo, "counter.json", f"[{round_}, {n}]\n")
                assert repo.commit_paths(["counter.json"], message(), ADA) is not None
            repo.log()
            repo.file_at_first_add("counter.json")
    assert commit_count(git_repo) == 201
    # At most as many as before: one an earlier test left may close meanwhile, never one more.
    assert open_fds() <= fds
    assert child_processes() <= children
    assert not list((git_repo / ".git").glob("feedbackd-index-*"))


def test_healing_many_lagging_paths_names_them_to_git_a_chunk_at_a_time(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a crash between a commit of many files and the index update, the index follows the
    commit again, and git never gets all the paths on one command line."""
    monkeypatch.setattr("feedbackd.edges.git.userindex._PATHS_PER_COMMAND", 2)
    names = [f"_data/agents/w/queue/qi-{number}.json" for number in range(5)]
    for name in names:
        write(git_repo, name, "{}\n")
    with GitRepo(git_repo) as repo:
        assert repo.commit_paths(names, message(), ADA) is not None
    git(git_repo, "reset", "-q", "HEAD~1", "--", *names)  # the index lags behind the commit
    write(git_repo, "notes.txt", "mine\n")
    git(git_repo, "add", "notes.txt")  # the user's own staged work
    with GitRepo(git_repo) as repo:
        assert repo.heal_index() == sorted(names)
    assert git(git_repo, "status", "--porcelain") == "A  notes.txt\n"


def test_put_back_writes_what_head_holds_and_never_overwrites(
    repo: GitRepo, git_repo: Path
) -> None:
    write(git_repo, "items/run.sh", "#!/bin/sh\n")
    (git_repo / "items/run.sh").chmod(0o755)
    os.symlink("run.sh", git_repo / "items/link.sh")
    write(git_repo, "items/a.json", "{}\n")
    repo.commit_paths(["items"], message(), ADA)
    for name in ("run.sh", "link.sh", "a.json"):
        (git_repo / "items" / name).unlink()
    (git_repo / "items/a.json").write_text('{"written": "meanwhile"}\n')

    assert repo.put_back("items/run.sh", git_repo)
    assert repo.put_back("items/link.sh", git_repo)
    assert not repo.put_back("items/a.json", git_repo)  # something is there: it stays
    assert not repo.put_back("items/never.json", git_repo)

    assert os.access(git_repo / "items/run.sh", os.X_OK)
    assert os.readlink(git_repo / "items/link.sh") == "run.sh"
    assert (git_repo / "items/a.json").read_text() == '{"written": "meanwhile"}\n'
    assert git(git_repo, "status", "--porcelain", "--", "items") == " M items/a.json\n"
    assert not [p for p in (git_repo / "items").iterdir() if p.name.startswith(".")]


def test_the_ids_head_holds_are_git_own_whatever_the_folder(repo: GitRepo, git_repo: Path) -> None:
    for rel in ("top.txt", "a/one.json", "a/two.json", "a/b/deep.json"):
        write(git_repo, rel, f"{rel}\n")
    repo.commit_paths(["top.txt", "a"], message(), ADA)
    asked = ["a/one.json", "top.txt", "a/b/deep.json", "a/two.json", "a/none.json", "x/y.json"]
    asked += ["a/b", "top.txt/z"]  # a folder: its tree; below a file: nothing
    found = repo.file_ids_at_head(asked)
    for rel in asked[:4]:
        assert found[rel] == git(git_repo, "rev-parse", f"HEAD:{rel}").strip()
    assert [found[rel] for rel in asked[4:]] == [None, None, found["a/b"], None]
    assert found["a/b"] == git(git_repo, "rev-parse", "HEAD:a/b").strip()


def test_a_folder_move_is_committed_only_while_the_work_tree_shows_it(
    repo: GitRepo, git_repo: Path
) -> None:
    # The move is seen, then a `git stash -u` puts the old folder back and takes the new one
    # away before the commit holds the index lock: committing it then would leave HEAD holding
    # a folder the work tree lacks, and the stash's pop would meet it.
    write(git_repo, "agents/writer/a.json", "{}\n")
    first = repo.commit_paths(["agents/writer/a.json"], message(), ADA)
    assert repo.commit_folder_move("agents/writer", "agents/author", message(), ADA) is None
    assert git(git_repo, "rev-parse", "HEAD").strip() == first
    os.rename(git_repo / "agents/writer", git_repo / "agents/author")
    moved = repo.commit_folder_move("agents/writer", "agents/author", message(), ADA)
    assert moved is not None
    assert "agents/author/a.json" in committed_names(git_repo)
    assert git(git_repo, "status", "--porcelain") == ""

"""Running git: through the one process runner, pinned to its repository, in English, no prompts.

Real git in temporary repositories; the environment git sees is read back with a shell alias.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from feedbackd.core.errors import GitError, WorkspaceError
from feedbackd.core.workspacepaths import Workspace
from feedbackd.edges.git.repo import GitRepo
from feedbackd.edges.git.runner import GitRunner, git_in, rel_path
from tests.conftest import git
from tests.git_kit import ADA, commit_count, committed_names, message, write


def environment_git_sees(runner: GitRunner) -> dict[str, str]:
    out = runner.run(["-c", "alias.showenv=!env -0", "showenv"]).decode()
    return dict(entry.split("=", 1) for entry in out.split("\0") if "=" in entry)


def test_git_runs_pinned_to_its_repository_in_english_without_prompts(git_repo: Path) -> None:
    seen = environment_git_sees(GitRunner(git_repo, git_repo / ".git"))
    assert seen["GIT_DIR"] == str(git_repo / ".git")
    assert seen["GIT_WORK_TREE"] == str(git_repo)
    assert seen["GIT_INDEX_FILE"] == str(git_repo / ".git" / "index")
    assert (seen["LC_ALL"], seen["LANGUAGE"]) == ("C", "C")
    assert seen["GIT_TERMINAL_PROMPT"] == "0"
    assert seen["GIT_LITERAL_PATHSPECS"] == "1"


def test_an_inherited_git_dir_or_index_never_points_feedbackd_elsewhere(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    GitRepo.init(other)
    with GitRepo(git_repo) as repo:
        # What a hook or a shell may hand down, set while the repository is open.
        monkeypatch.setenv("GIT_DIR", str(other / ".git"))
        monkeypatch.setenv("GIT_WORK_TREE", str(other))
        monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
        write(git_repo, "f.json", "[]\n")
        assert repo.commit_paths(["f.json"], message(), ADA) is not None
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert committed_names(git_repo) == ["f.json"]
    assert commit_count(git_repo) == 2
    assert not (other / ".git" / "index").exists()
    assert git(git_repo, "status", "--porcelain") == ""


def test_a_missing_git_program_is_a_git_error_that_names_it(git_repo: Path, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-git")
    with pytest.raises(GitError) as caught:
        GitRunner(git_repo, git_repo / ".git", executable=missing).run(["status"])
    assert f"cannot start {missing!r}: No such file or directory" in caught.value.message
    assert "install git" in caught.value.hint
    with pytest.raises(GitError, match="cannot start"):
        git_in(git_repo, ["status"], executable=missing)


def test_standard_input_reaches_git_byte_for_byte(git_repo: Path) -> None:
    data = b"\x00\xff not UTF-8, no newline"
    runner = GitRunner(git_repo, git_repo / ".git")
    sha = runner.run(["hash-object", "-w", "--stdin"], stdin=data).decode().strip()
    assert runner.run(["cat-file", "blob", sha]) == data


def test_a_failing_git_command_keeps_its_status_and_message(git_repo: Path) -> None:
    status, out, err = git_in(git_repo, ["rev-parse", "--verify", "no-such-branch"])
    assert (status, out) == (128, b"")
    assert "fatal: Needed a single revision" in err


@pytest.mark.parametrize(
    ("given", "spelled"),
    [
        ("_data/agents/w/approved/d1.json", "_data/agents/w/approved/d1.json"),
        ("_data//agents/./w/", "_data/agents/w"),
        ("./docs/a.md", "docs/a.md"),
        ("a/.gitignore", "a/.gitignore"),
        (".github/x", ".github/x"),
    ],
)
def test_a_path_is_given_to_git_in_its_own_spelling(given: str, spelled: str) -> None:
    assert rel_path(given) == spelled


@pytest.mark.parametrize(
    "given", ["", "/etc/passwd", "../x", "a/../../x", ".git/config", ".", "a\0b"]
)
def test_a_path_that_could_leave_the_workspace_is_refused(given: str) -> None:
    with pytest.raises(WorkspaceError):
        rel_path(given)


def test_a_workspace_names_its_files_as_git_does(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "ws")
    agent = workspace.agent("w")
    assert workspace.relative(agent.approved / "d1.json") == "_data/agents/w/approved/d1.json"
    assert workspace.relative(workspace.root / "feedbackd.yaml") == "feedbackd.yaml"
    beside = tmp_path / "ws-other" / "x.json"  # shares the root's spelling, not its folder
    with pytest.raises(ValueError):
        workspace.relative(beside)

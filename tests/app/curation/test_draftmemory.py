"""The drafts' commits kept in `.feedbackd/draft-adds` (DraftAdds, app/curation/draftmemory.py):
an approval of a draft remembered as git first had it is diffed against the commit that last
added the draft, known without a walk of history per pass. Whatever HEAD went through (the
daemon's decisions, a user's commit, a reset, a pull, a merge, a draft re-added), the kept answer
is the one a walk of history gives; it survives a restart and is rebuilt once when lost."""

from __future__ import annotations

import os
from pathlib import Path

from feedbackd.app.commits.openrepo import open_repo
from feedbackd.app.curation.draftmemory import ADDS_FILE, DraftAdds
from feedbackd.edges.git.adds import LINE_MAX, in_folders
from feedbackd.edges.git.repo import history_of
from tests.conftest import git
from tests.git_kit import counting_git
from tests.workspace_kit import Site, draft

UNDER = "_data/agents"


def walked(site: Site) -> dict[str, str]:
    """What a walk of HEAD's whole history says: queue path → the commit that last added it."""
    with open_repo(site.runtime()) as repo:
        assert repo is not None
        history = history_of(repo)
        head = history.head()
        assert head is not None
        return history.last_adds(head, UNDER, lambda path: in_folders(path, UNDER, "queue"))


def kept(site: Site, adds: DraftAdds) -> dict[str, str]:
    with open_repo(site.runtime()) as repo:
        assert repo is not None
        return dict(adds.commits(repo))


def commit_draft(site: Site, agent: str, name: str, title: str, message: str = "a draft") -> str:
    """A draft written and committed by hand (as another machine's daemon or a user would)."""
    path = site.write(agent, name, draft({"title": title}))
    site.git("add", str(path))
    site.git("commit", "-q", "-m", message)
    return site.git("rev-parse", "HEAD").strip()


def remove_draft(site: Site, agent: str, name: str) -> None:
    site.git("rm", "-q", str(site.agent(agent) / "queue" / name))
    site.git("commit", "-q", "-m", f"remove {name}")


def test_the_kept_commits_follow_head_as_a_walk_of_history_would(tmp_path: Path) -> None:
    """Commits of one parent each on top of the kept answer are read from their trees: no walk
    of history, and the same answer as a walk, whatever they changed."""
    site = Site(tmp_path / "site")
    for number in range(3):
        commit_draft(site, "a", f"qi-{number}.json", f"Draft {number}")
    adds = DraftAdds(site.runtime())
    assert kept(site, adds) == walked(site)
    assert adds.walks == 1

    commit_draft(site, "b", "qi-9.json", "A new agent's draft")  # a new agent folder
    site.move("a", "qi-0.json", "approved")  # the daemon's decision
    site.reconcile()
    remove_draft(site, "a", "qi-1.json")
    re_added = commit_draft(site, "a", "qi-1.json", "Written again")  # a draft re-added
    site.git("mv", str(site.agent("b")), str(site.agent("c")))  # an agent folder renamed
    site.git("commit", "-q", "-m", "rename b to c")
    # a folder where a draft was, and a draft where a folder was
    remove_draft(site, "a", "qi-2.json")
    site.write("a", "qi-2.json/inside.json", draft({"title": "in a folder"}))
    site.write("a", "odd", draft({"title": "a file"}), folder="queue/deeper")
    site.git("add", "-A", "_data")
    site.git("commit", "-q", "-m", "folders")
    site.git("rm", "-rq", str(site.agent("a") / "queue" / "qi-2.json"))
    commit_draft(site, "a", "qi-2.json", "A file again")

    assert kept(site, adds) == walked(site)
    assert adds.walks == 1
    assert kept(site, adds)["_data/agents/a/queue/qi-1.json"] == re_added


def test_a_reset_a_merge_or_a_long_stretch_is_walked_once(tmp_path: Path) -> None:
    site = Site(tmp_path / "site")
    first = commit_draft(site, "a", "qi-1.json", "First version")
    remove_draft(site, "a", "qi-1.json")
    commit_draft(site, "a", "qi-1.json", "Second version")
    adds = DraftAdds(site.runtime())
    assert kept(site, adds)["_data/agents/a/queue/qi-1.json"] != first

    site.git("reset", "-q", "--hard", first)  # the kept answer's commit is not in HEAD's past
    assert kept(site, adds) == walked(site)
    assert kept(site, adds)["_data/agents/a/queue/qi-1.json"] == first
    assert adds.walks == 2

    site.git("checkout", "-q", "-b", "side")
    commit_draft(site, "a", "qi-side.json", "From a side branch")
    site.git("checkout", "-q", "main")
    commit_draft(site, "a", "qi-main.json", "On main")
    site.git("merge", "-q", "--no-edit", "side")
    assert kept(site, adds) == walked(site)
    assert adds.walks == 3

    for number in range(LINE_MAX + 1):
        commit_draft(site, "a", f"many-{number}.json", f"Many {number}")
    assert kept(site, adds) == walked(site)
    assert adds.walks == 4
    assert kept(site, adds) == walked(site)
    assert adds.walks == 4  # nothing new since


def test_the_kept_commits_survive_a_restart_and_are_rebuilt_when_lost(tmp_path: Path) -> None:
    site = Site(tmp_path / "site")
    commit_draft(site, "a", "qi-1.json", "Draft")
    kept(site, DraftAdds(site.runtime()))
    store = site.root / ".feedbackd" / ADDS_FILE
    assert store.is_file()
    assert site.git("status", "--porcelain", "--ignored", ".feedbackd").strip() == "!! .feedbackd/"

    commit_draft(site, "a", "qi-2.json", "Another draft")
    restarted = DraftAdds(site.runtime())  # a new process: the file, then the commit since
    assert kept(site, restarted) == walked(site)
    assert restarted.walks == 0

    store.unlink()
    lost = DraftAdds(site.runtime())
    assert kept(site, lost) == walked(site)
    assert lost.walks == 1
    assert store.is_file()

    store.write_bytes(store.read_bytes()[:-10])  # cut short (a crash: it is written unsynced)
    damaged = DraftAdds(site.runtime())
    assert kept(site, damaged) == walked(site)
    assert damaged.walks == 1

    site.configure("data_dir: elsewhere\n")  # kept for another data folder
    other = DraftAdds(site.runtime())
    with open_repo(site.runtime()) as repo:
        assert repo is not None
        assert other.commits(repo) == {}
    assert other.walks == 1


# --- through the passes: what a correction is diffed against --------------------------------
def edit_and_approve(site: Site, agent: str, name: str, title: str) -> dict[str, str]:
    """The curator's edit of a queued draft, then its approval; the correction recorded."""
    site.write(agent, name, draft({"title": title}))
    site.move(agent, name, "approved")
    site.reconcile()
    [entry] = [e for e in site.feedback(agent) if e.get("queueItemId") == Path(name).stem]
    return entry


def test_a_draft_re_added_is_diffed_against_its_new_version(tmp_path: Path) -> None:
    site = Site(tmp_path / "site")
    commit_draft(site, "a", "qi-1.json", "First version")
    commit_draft(site, "a", "qi-2.json", "Other")
    site.reconcile()  # remembered as git first had them
    edit_and_approve(site, "a", "qi-2.json", "Other, edited")  # the kept commits are made
    remove_draft(site, "a", "qi-1.json")
    commit_draft(site, "a", "qi-1.json", "Second version")
    site.reconcile()
    entry = edit_and_approve(site, "a", "qi-1.json", "Edited")
    assert (entry["original"], entry["corrected"]) == ("Second version", "Edited")


def test_after_a_reset_a_draft_is_diffed_against_the_version_head_holds(tmp_path: Path) -> None:
    """The kept commits named the draft's second version; a `git reset` back to its first makes
    them stale: they are worked out again, not read as they were."""
    site = Site(tmp_path / "site")
    first = commit_draft(site, "a", "qi-1.json", "First version")
    commit_draft(site, "a", "qi-2.json", "Other")
    site.reconcile()
    remove_draft(site, "a", "qi-1.json")
    commit_draft(site, "a", "qi-1.json", "Second version")
    (site.root / ".feedbackd" / ADDS_FILE).unlink()  # made again now: qi-1 is the second
    edit_and_approve(site, "a", "qi-2.json", "Other, edited")
    site.git("reset", "-q", "--hard", first)
    entry = edit_and_approve(site, "a", "qi-1.json", "Edited")
    assert (entry["original"], entry["corrected"]) == ("First version", "Edited")


def test_drafts_pulled_from_another_clone_are_diffed_against_their_commit(
    tmp_path: Path,
) -> None:
    """Another clone's drafts (one new, one re-added) reach this one by a pull, fast-forward or
    merged with a commit of this clone's own."""
    origin = Site(tmp_path / "origin")
    commit_draft(origin, "a", "qi-1.json", "First version")
    commit_draft(origin, "a", "qi-2.json", "Other")
    clone = Site(tmp_path / "clone", made=True)
    git(tmp_path, "clone", "-q", str(origin.root), str(clone.root))
    clone.reconcile()
    edit_and_approve(clone, "a", "qi-2.json", "Other, edited")  # the kept commits are made

    remove_draft(origin, "a", "qi-1.json")
    commit_draft(origin, "a", "qi-1.json", "Second version, from the origin")
    commit_draft(origin, "a", "qi-3.json", "New on the origin")
    clone.git("pull", "-q", "--no-rebase", "origin", "main")
    clone.reconcile()
    entry = edit_and_approve(clone, "a", "qi-3.json", "Edited here")
    assert (entry["original"], entry["corrected"]) == ("New on the origin", "Edited here")

    commit_draft(origin, "a", "qi-4.json", "Origin's fourth")
    commit_draft(clone, "b", "qi-5.json", "The clone's own")  # the pull is a merge
    clone.git("pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    clone.reconcile()
    entry = edit_and_approve(clone, "a", "qi-4.json", "Edited too")
    assert (entry["original"], entry["corrected"]) == ("Origin's fourth", "Edited too")
    entry = edit_and_approve(clone, "a", "qi-1.json", "Edited at last")
    assert entry["original"] == "Second version, from the origin"


def test_a_lost_memory_is_rebuilt_and_gives_the_same_correction(tmp_path: Path) -> None:
    site = Site(tmp_path / "site")
    commit_draft(site, "a", "qi-1.json", "First version")
    commit_draft(site, "a", "qi-2.json", "Other")
    site.reconcile()
    edit_and_approve(site, "a", "qi-2.json", "Other, edited")
    store = site.root / ".feedbackd" / ADDS_FILE
    os.remove(store)
    entry = edit_and_approve(site, "a", "qi-1.json", "Edited")
    assert (entry["original"], entry["corrected"]) == ("First version", "Edited")
    assert store.is_file()


def test_approvals_of_a_clones_drafts_walk_no_history(tmp_path: Path) -> None:
    """Approving drafts that git first had (a clone's) reads their draft commits from what is
    kept: no pass walks the history, whose length grows with every decision."""
    site = Site(tmp_path / "site")
    for number in range(4):
        commit_draft(site, "a", f"qi-{number}.json", f"Draft {number}")
    site.reconcile()
    edit_and_approve(site, "a", "qi-0.json", "Edited 0")  # the kept commits are made
    wrapper, log = counting_git(tmp_path / "bin")
    env = {**os.environ, "GIT_PYTHON_GIT_EXECUTABLE": str(wrapper)}
    for number in (1, 2):
        site.write("a", f"qi-{number}.json", draft({"title": f"Edited {number}"}))
        site.move("a", f"qi-{number}.json", "approved")
        done = site.cli_process("run", "--once", env=env)
        assert done.returncode == 0, done.stderr
    walks = [line for line in log.read_text().splitlines() if "--diff-filter=A" in line]
    assert walks == []
    originals = {e["queueItemId"]: e["original"] for e in site.feedback("a")}
    assert originals == {"qi-0": "Draft 0", "qi-1": "Draft 1", "qi-2": "Draft 2"}

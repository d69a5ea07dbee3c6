"""Remote sync with real git: a bare repository as the remote and clones as the machines."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from feedbackd.app.daemon.runonce import run_once
from feedbackd.app.remotesync import Syncer, backoff_s, overlapping, problem_line, sync_status
from feedbackd.app.workspace.runtime import Runtime
from tests.daemon_kit import DaemonProcess, NotifyListener, wait_for
from tests.workspace_kit import Site, draft

CONFIG = "git:\n  remote: origin\n"
AGENT = "w"


class Network:
    """One bare remote and the machines that clone it."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.bare = tmp_path / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.bare)], check=True)
        seed = Site(tmp_path / "seed")
        seed.configure(CONFIG)
        for n in range(1, 5):
            seed.write(AGENT, f"qi-{n}.json", draft({"title": f"Title {n}", "excerpt": "Short."}))
        (seed.root / "notes.txt").write_text("shared notes\n")
        seed.git("add", "-A")
        seed.git("commit", "-qm", "Seed the workspace")
        seed.git("remote", "add", "origin", str(self.bare))
        seed.git("push", "-q", "origin", "main")

    def clone(self, name: str) -> Site:
        root = self.tmp / name
        subprocess.run(["git", "clone", "-q", str(self.bare), str(root)], check=True)
        return Site(root)  # runs `feedbackd init` in the clone

    def head(self) -> str:
        done = subprocess.run(
            ["git", "rev-parse", "main"], cwd=self.bare, capture_output=True, text=True
        )
        return done.stdout.strip()


@pytest.fixture
def net(tmp_path: Path) -> Network:
    return Network(tmp_path)


def approve(site: Site, item: str, title: str) -> None:
    site.write(AGENT, f"{item}.json", draft({"title": title, "excerpt": "Short."}))
    site.move(AGENT, f"{item}.json", "approved")


def reject(site: Site, item: str, notes: str) -> None:
    site.write(AGENT, f"{item}.json", draft({"title": "x"}, rejectionFeedback=notes))
    site.move(AGENT, f"{item}.json", "rejected")


def once(site: Site) -> list[str]:
    """`run --once` in-process; returns its warnings."""
    return run_once(site.runtime()).warnings


def head(site: Site) -> str:
    return site.git("rev-parse", "HEAD").strip()


def memory(site: Site) -> dict[str, object]:
    return json.loads((site.root / ".feedbackd" / "sync.json").read_text())


def agent_files(site: Site) -> dict[str, bytes]:
    folder = site.agent(AGENT)
    names = ["feedback.json", "decisions.jsonl", "prompt/feedback.md"]
    return {name: (folder / name).read_bytes() for name in names}


def no_sync_leftovers(site: Site) -> None:
    worktrees = site.git("worktree", "list", "--porcelain").count("worktree ")
    assert worktrees == 1
    assert not list((site.root / ".git" / "feedbackd-sync").glob("wt-*"))
    assert not (site.root / ".git" / "rebase-merge").exists()
    assert not (site.root / ".git" / "rebase-apply").exists()


# --- convergence --------------------------------------------------------------------------------
def test_init_is_idempotent_in_a_clone(net: Network) -> None:
    site = net.clone("a")
    before = head(site)
    assert "merge-driver %O %A %B %P" in site.git("config", "merge.feedbackd.driver")
    Site(site.root)  # init again
    assert head(site) == before == net.head()
    assert site.git("status", "--porcelain") == ""


@pytest.mark.slow
def test_three_machines_deciding_at_once_converge(net: Network) -> None:
    a, b, c = net.clone("a"), net.clone("b"), net.clone("c")
    approve(a, "qi-1", "Title one, sharper")
    reject(b, "qi-2", "Tone is too dry")
    approve(c, "qi-3", "Title three, clearer")
    cli = b.cli("run", "--once")
    assert cli.returncode == 0, cli.stderr
    for site in (a, c):
        assert once(site) == []
    for _ in range(3):  # until nobody has anything left to pull or push
        before = net.head()
        for site in (a, b, c):
            assert once(site) == []
        if net.head() == before:
            break
    files = [agent_files(site) for site in (a, b, c)]
    assert files[0] == files[1] == files[2]
    entries = json.loads(files[0]["feedback.json"])
    assert sorted((e["queueItemId"], e["type"]) for e in entries) == [
        ("qi-1", "correction"),
        ("qi-2", "rejection"),
        ("qi-3", "correction"),
    ]
    assert len({e["id"] for e in entries}) == 3
    ledger = [json.loads(x) for x in files[0]["decisions.jsonl"].decode().splitlines()]
    assert sorted((r["item"], r["state"]) for r in ledger) == [
        ("qi-1", "approved"),
        ("qi-2", "rejected"),
        ("qi-3", "approved"),
    ]
    snippet = files[0]["prompt/feedback.md"].decode()
    assert "Title one, sharper" in snippet and "Title three, clearer" in snippet
    for site in (a, b, c):
        assert head(site) == net.head()
        assert site.git("status", "--porcelain") == ""
        assert not conflict_markers(site)
        no_sync_leftovers(site)
    decided = a.git("log", "--format=%s", "--grep=^Feedback-Event: \\(approve\\|reject\\)").split(
        "\n"
    )
    assert sorted(filter(None, decided)) == [
        "approve(w): qi-1, 1 correction (title)",
        "approve(w): qi-3, 1 correction (title)",
        "reject(w): qi-2",
    ]


PROVIDER, SKILL = "p", "s1"


def overpriced(site: Site, buyer: str) -> None:
    """A buyer's rating of the provider's skill, calling it overpriced (`feedback submit`)."""
    doc = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": PROVIDER,
        "skill_id": SKILL,
        "rating": 2,
        "result_quality": "acceptable",
        "would_reuse": False,
        "cost_value_ratio": "overpriced",
    }
    done = site.cli("feedback", "submit", "--as", buyer, "--json", json.dumps(doc))
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_one_price_cut_made_on_three_machines_at_once_is_kept_once(net: Network) -> None:
    seed = net.clone("first")
    soul = seed.agent(PROVIDER) / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text(f"# P\n\nRuns things.\n\n## {SKILL}\nRuns it.\npricing: 20\n")
    seed.git("add", "-A")
    seed.git("commit", "-qm", "A provider and its priced skill")
    for _ in range(2):  # not enough for a cut yet: one buyer, two ratings
        overpriced(seed, "buyer-0")
    assert once(seed) == []
    machines = [net.clone(name) for name in ("a", "b", "c")]
    for site in machines:  # each one's own rating tips the rule, before any of them syncs
        overpriced(site, "buyer-1")
        assert "pricing: 19\n" in (site.agent(PROVIDER) / "SOUL.md").read_text()
    for _ in range(3):  # until nobody has anything left to pull or push
        before = net.head()
        for site in reversed(machines):  # the last to cut is the first to push
            assert once(site) == []
        if net.head() == before:
            break
    for site in machines:
        assert head(site) == net.head() and site.git("status", "--porcelain") == ""
        assert "pricing: 19\n" in (site.agent(PROVIDER) / "SOUL.md").read_text()
        [cut] = (site.agent(PROVIDER) / "pricing.jsonl").read_text().splitlines()
        assert (json.loads(cut)["priceOld"], json.loads(cut)["priceNew"]) == ("20", "19")
    cuts = machines[0].git("log", "--format=%s", f"--grep=^pricing({PROVIDER}/{SKILL})")
    assert len(cuts.splitlines()) == 1, cuts
    ratings = machines[0].git("log", "--format=%s", f"--grep=^rating({PROVIDER}/{SKILL})")
    assert len(ratings.splitlines()) == 5


def priced_provider(net: Network) -> None:
    """The provider's SOUL.md, its skill priced at 20, on the remote."""
    seed = net.clone("first")
    soul = seed.agent(PROVIDER) / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text(f"# P\n\nRuns things.\n\n## {SKILL}\nRuns it.\npricing: 20\n")
    seed.git("add", "-A")
    seed.git("commit", "-qm", "A provider and its priced skill")
    assert once(seed) == []


def price_of(site: Site) -> str:
    return (site.agent(PROVIDER) / "SOUL.md").read_text().rsplit("pricing: ", 1)[1].strip()


@pytest.mark.slow
def test_a_price_cut_that_only_a_pull_brings_about_is_made_once(net: Network) -> None:
    """Three buyers each say "overpriced" on a machine of their own: no machine crosses the
    threshold alone, so the rules must run on the ratings a pull brings in. The first machine
    that sees all three cuts the price; the cut reaches the others, and it is made once."""
    priced_provider(net)
    machines = [net.clone(name) for name in ("a", "b", "c")]
    for number, site in enumerate(machines, start=1):
        overpriced(site, f"buyer-{number}")
        assert price_of(site) == "20"
    for _ in range(3):  # until nobody has anything left to pull or push
        before = net.head()
        for site in machines:
            assert once(site) == []
        if net.head() == before:
            break
    for site in machines:
        assert head(site) == net.head() and site.git("status", "--porcelain") == ""
        assert price_of(site) == "19"
        [cut] = (site.agent(PROVIDER) / "pricing.jsonl").read_text().splitlines()
        assert (json.loads(cut)["priceOld"], json.loads(cut)["priceNew"]) == ("20", "19")
    cuts = machines[0].git("log", "--format=%s", f"--grep=^pricing({PROVIDER}/{SKILL})")
    assert len(cuts.splitlines()) == 1, cuts


@pytest.mark.slow
def test_a_running_daemon_cuts_the_price_its_own_pull_calls_for(
    net: Network, tmp_path: Path
) -> None:
    """Another machine pushed two ratings; the daemon's machine holds a third, from a third
    buyer: the daemon pulls the two, cuts the price and pushes the cut."""
    priced_provider(net)
    a, b = net.clone("a"), net.clone("b")
    overpriced(a, "buyer-1")
    overpriced(a, "buyer-2")
    a.git("push", "-q", "origin", "main")
    b.configure(f"{CONFIG}  pull_interval_s: 1\ndaemon:\n  settle_ms: 100\n")
    b.git("commit", "-qm", "sync every second", "feedbackd.yaml")
    overpriced(b, "buyer-3")  # no cut on b alone
    assert price_of(a) == price_of(b) == "20"
    listener = NotifyListener(tmp_path)
    daemon = DaemonProcess(b, listener)
    try:
        daemon.wait_ready()
        wait_for(lambda: price_of(b) == "19", what="the cut on the daemon's machine")
        wait_for(lambda: net.head() == head(b), what="the cut pushed")
    finally:
        daemon.close()
        listener.close()
    assert once(a) == [] and price_of(a) == "19"
    cuts = a.git("log", "--format=%s", f"--grep=^pricing({PROVIDER}/{SKILL})")
    assert len(cuts.splitlines()) == 1, cuts


def test_a_price_cut_that_a_users_own_pull_brings_about_is_made_by_the_next_pass(
    tmp_path: Path,
) -> None:
    """No git.remote: the user pulls two colleagues' clones by hand (`git pull`). The next pass
    (`run --once`, or the daemon's start-up pass after a restart) runs the rules on the ratings
    that came in, and cuts the price."""
    home = Site(tmp_path / "home")
    soul = home.agent(PROVIDER) / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text(f"# P\n\nRuns things.\n\n## {SKILL}\nRuns it.\npricing: 20\n")
    home.git("add", "-A")
    home.git("commit", "-qm", "A provider and its priced skill")
    colleagues = []
    for name in ("b", "c"):
        subprocess.run(["git", "clone", "-q", str(home.root), str(tmp_path / name)], check=True)
        colleagues.append(Site(tmp_path / name))
    assert once(home) == []
    overpriced(home, "buyer-1")
    for number, site in enumerate(colleagues, start=2):
        overpriced(site, f"buyer-{number}")
    for site in colleagues:
        home.git("pull", "-q", "--no-rebase", "--no-edit", str(site.root), "main")
    assert price_of(home) == "20"
    assert home.cli("run", "--once").returncode == 0
    assert price_of(home) == "19"
    assert home.git("status", "--porcelain") == ""
    assert home.cli("run", "--once").returncode == 0  # and once only
    cuts = home.git("log", "--format=%s", f"--grep=^pricing({PROVIDER}/{SKILL})")
    assert len(cuts.splitlines()) == 1, cuts


def poor(site: Site, buyer: str) -> None:
    """A buyer's poor rating of the provider's skill, saying what went wrong."""
    doc = {
        "transaction_id": str(uuid.uuid4()),
        "provider_agent": PROVIDER,
        "skill_id": SKILL,
        "rating": 1,
        "result_quality": "poor",
        "quality_details": "Too slow for a chat reply",
        "would_reuse": False,
        "cost_value_ratio": "fair",
    }
    done = site.cli("feedback", "submit", "--as", buyer, "--json", json.dumps(doc))
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_lessons_drawn_from_pulled_ratings_are_one_change_however_many_machines_draw_them(
    net: Network,
) -> None:
    """Each machine's own poor rating gives the same lesson; after the pulls each draws the
    lesson from both: every distinct lessons text is one `optimize` commit and one memory."""
    priced_provider(net)
    machines = [net.clone(name) for name in ("a", "b")]
    for number, site in enumerate(machines, start=1):
        poor(site, f"buyer-{number}")
    for _ in range(3):
        before = net.head()
        for site in machines:
            assert once(site) == []
        if net.head() == before:
            break
    lessons = [
        (s.agent(PROVIDER) / "prompt" / "skills" / f"{SKILL}.md").read_text() for s in machines
    ]
    assert lessons[0] == lessons[1] and "Too slow for a chat reply" in lessons[0]
    assert "(2×)" in lessons[0], lessons[0]
    made = machines[0].git("log", "--format=%s", f"--grep=^optimize({PROVIDER}/{SKILL})")
    patterns = (machines[0].agent(PROVIDER) / "memory" / "patterns.jsonl").read_text()
    adjusted = [x for x in patterns.splitlines() if "adjusted" in x]
    assert len(made.splitlines()) == len(adjusted) == 2, (made, adjusted)


def conflict_markers(site: Site) -> list[str]:
    found = subprocess.run(
        ["git", "grep", "-l", "-e", "^<<<<<<< ", "-e", "^>>>>>>> "],
        cwd=site.root,
        capture_output=True,
        text=True,
    )
    return found.stdout.split()


# --- failures and retries -----------------------------------------------------------------------
def test_an_unreachable_remote_keeps_the_commit_and_backs_off(net: Network) -> None:
    a = net.clone("a")
    approve(a, "qi-1", "Offline edit")
    away = net.bare.with_name("remote-away.git")
    net.bare.rename(away)
    warnings = once(a)
    assert len(warnings) == 1 and "could not fetch main from origin" in warnings[0]
    committed = head(a)
    assert "approve(w): qi-1" in a.git("log", "-1", "--format=%s")
    state = memory(a)
    assert state["outcome"] == "offline" and state["failures"] == 1
    syncer = Syncer(a.runtime())
    retry_at = syncer.memory.retry_at
    assert retry_at is not None and syncer.memory.last_attempt is not None
    assert retry_at - syncer.memory.last_attempt >= backoff_s(1) - 0.5
    assert not syncer.due(retry_at - 0.5) and syncer.due(retry_at + 60)
    assert problem_line(syncer.status()) is not None
    assert syncer.sync().outcome == "offline"  # a running daemon retries at the backoff
    retry_at = syncer.memory.retry_at
    assert retry_at is not None and syncer.memory.failures == 2
    assert not syncer.due(retry_at - 0.5) and syncer.due(retry_at)
    away.rename(net.bare)
    assert once(a) == []
    assert net.head() == head(a) == committed
    assert memory(a)["failures"] == 0 and memory(a)["last_error"] is None


def test_a_push_rejected_because_another_machine_pushed_first_is_retried(net: Network) -> None:
    a, b = net.clone("a"), net.clone("b")
    approve(a, "qi-1", "From machine a")
    a.reconcile()
    a.git("push", "-q", "origin", "HEAD:refs/heads/a-waiting")
    # Machine a's push lands while b is pushing: b's first push is refused.
    hook = net.bare / "hooks" / "pre-receive"
    hook.write_text(
        '#!/bin/sh\nrm -f "$0"\nunset GIT_QUARANTINE_PATH\n'
        f"git update-ref refs/heads/main {head(a)}\n"
        "git update-ref -d refs/heads/a-waiting\n"
    )
    hook.chmod(0o755)
    reject(b, "qi-2", "From machine b")
    assert once(b) == []
    assert not hook.exists()
    assert net.head() == head(b)
    assert b.git("merge-base", "--is-ancestor", head(a), "HEAD") == ""
    assert {e["queueItemId"] for e in b.feedback(AGENT)} == {"qi-1", "qi-2"}
    assert b.git("status", "--porcelain") == ""


# --- the user's own work ------------------------------------------------------------------------
def test_sync_leaves_a_users_modified_staged_and_untracked_files_alone(net: Network) -> None:
    a, b = net.clone("a"), net.clone("b")
    approve(a, "qi-1", "Pulled from a")
    assert once(a) == []
    (b.root / "notes.txt").write_text("my unsaved thoughts\r\n")  # modified, not staged
    (b.root / "staged.md").write_text("staged new file\n")
    (b.root / "README.md").write_text("staged change\n")
    b.git("add", "staged.md", "README.md")
    (b.root / "README.md").write_text("staged change, then edited again\n")
    (b.root / "scratch.txt").write_bytes(b"\x00binary scratch\xff")
    snapshot = {n: (b.root / n).read_bytes() for n in ("notes.txt", "staged.md", "README.md")}
    snapshot["scratch.txt"] = (b.root / "scratch.txt").read_bytes()
    staged = b.git("diff", "--cached", "--name-status")
    status = b.git("status", "--porcelain")
    reject(b, "qi-2", "Local decision")  # a local commit too: the pull is a rebase
    assert once(b) == []
    assert {n: (b.root / n).read_bytes() for n in snapshot} == snapshot
    assert b.git("diff", "--cached", "--name-status") == staged
    assert b.git("status", "--porcelain") == status
    assert head(b) == net.head()
    assert {e["queueItemId"] for e in b.feedback(AGENT)} == {"qi-1", "qi-2"}
    no_sync_leftovers(b)


def test_a_pull_that_would_overwrite_a_users_change_waits_and_says_how(net: Network) -> None:
    a, b = net.clone("a"), net.clone("b")
    (a.root / "notes.txt").write_text("notes from a\n")
    a.git("commit", "-qam", "Edit notes on a")
    a.git("push", "-q", "origin", "main")
    (b.root / "notes.txt").write_text("my edit on b\n")
    before = head(b)
    warnings = once(b)
    assert len(warnings) == 1 and "notes.txt" in warnings[0] and "git -C" in warnings[0]
    assert (b.root / "notes.txt").read_text() == "my edit on b\n"
    assert head(b) == before
    status = sync_status(b.runtime())
    assert status["conflict"]["kind"] == "local-changes"
    assert "stash" in status["conflict"]["resolve"]
    b.git("stash", "-q")
    assert once(b) == []
    assert head(b) == net.head() and (b.root / "notes.txt").read_text() == "notes from a\n"
    assert sync_status(b.runtime())["conflict"] is None


def test_a_conflict_the_driver_cannot_solve_stops_syncing_until_resolved(net: Network) -> None:
    a, b = net.clone("a"), net.clone("b")
    (a.root / "notes.txt").write_text("notes from a\n")
    a.git("commit", "-qam", "Edit notes on a")
    a.git("push", "-q", "origin", "main")
    (b.root / "notes.txt").write_text("notes from b\n")
    b.git("commit", "-qam", "Edit notes on b")
    approve(b, "qi-1", "Decided on b")
    b.reconcile()
    before = head(b)
    warnings = once(b)
    assert len(warnings) == 1 and "conflict" in warnings[0] and "notes.txt" in warnings[0]
    assert head(b) == before and b.git("status", "--porcelain") == ""
    no_sync_leftovers(b)
    conflict = sync_status(b.runtime())["conflict"]
    assert conflict["kind"] == "rebase" and conflict["paths"] == ["notes.txt"]
    assert "pull --rebase --autostash origin main" in conflict["resolve"]
    # Stopped: more local work does not bring the same conflict back to a new rebase.
    approve(b, "qi-3", "Still deciding on b")
    assert len(once(b)) == 1
    assert sync_status(b.runtime())["conflict"]["since"] == conflict["since"]
    # The user resolves it as the status says; syncing resumes by itself.
    pulled = subprocess.run(
        ["git", "pull", "-q", "--rebase", "origin", "main"], cwd=b.root, capture_output=True
    )
    assert pulled.returncode != 0
    (b.root / "notes.txt").write_text("notes from a and b\n")
    b.git("add", "notes.txt")
    subprocess.run(
        ["git", "rebase", "--continue"],
        cwd=b.root,
        env={**os.environ, "GIT_EDITOR": "true"},
        check=True,
        capture_output=True,
    )
    assert once(b) == []
    assert head(b) == net.head()
    assert sync_status(b.runtime())["conflict"] is None


def test_a_leftover_temporary_worktree_is_removed(net: Network) -> None:
    a = net.clone("a")
    leftover = a.root / ".git" / "feedbackd-sync" / "wt-1-dead"
    leftover.parent.mkdir(parents=True, exist_ok=True)
    a.git("worktree", "add", "-q", "--detach", str(leftover), "HEAD")
    # Left mid-rebase, as a sync killed at the worst moment would leave it.
    for text in ("one\n", "two\n"):
        (leftover / "notes.txt").write_text(text)
        run_in(leftover, "commit", "-qam", text.strip())
        run_in(leftover, "tag", text.strip())
        run_in(leftover, "checkout", "-q", "--detach", "HEAD~1")
    stuck = subprocess.run(["git", "rebase", "one", "two"], cwd=leftover, capture_output=True)
    assert stuck.returncode != 0
    (net.tmp / "seed" / "notes.txt").write_text("newer notes\n")
    seed = Site(net.tmp / "seed")
    seed.git("commit", "-qam", "Newer notes")
    seed.git("push", "-q", "origin", "main")
    assert once(a) == []
    assert not leftover.exists()
    no_sync_leftovers(a)
    assert head(a) == net.head()


def run_in(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


def test_a_git_rebase_in_progress_is_left_to_the_user(net: Network) -> None:
    a = net.clone("a")
    (a.root / ".git" / "rebase-merge").mkdir()
    seed = Site(net.tmp / "seed")
    (seed.root / "notes.txt").write_text("newer notes\n")
    seed.git("commit", "-qam", "Newer notes")
    seed.git("push", "-q", "origin", "main")
    warnings = once(a)
    assert len(warnings) == 1 and "rebase is in progress" in warnings[0]
    assert "--continue" in (sync_status(a.runtime())["conflict"] or {})["resolve"]


# --- settings and scheduling --------------------------------------------------------------------
def test_a_detached_head_is_an_error_that_says_how_to_fix_it(net: Network) -> None:
    a = net.clone("a")
    a.git("switch", "-q", "--detach")
    result = Syncer(a.runtime()).sync()
    assert result.outcome == "error" and "git.branch" in result.message


def test_without_a_remote_run_once_does_not_sync(tmp_path: Path) -> None:
    site = Site(tmp_path / "solo")
    assert once(site) == []
    assert not (site.root / ".feedbackd" / "sync.json").exists()
    assert Syncer(site.runtime()).sync().outcome == "disabled"
    assert Syncer(site.runtime()).seconds_until_due(0.0) is None


def test_push_off_only_pulls(net: Network) -> None:
    a = net.clone("a")
    a.configure(CONFIG + "  push: false\n")
    approve(a, "qi-1", "Kept local")
    remote_before = net.head()
    assert once(a) == []
    assert net.head() == remote_before != head(a)


def test_commits_are_batched_and_the_interval_is_kept(net: Network) -> None:
    a = net.clone("a")
    runtime = Runtime.open(str(a.root), None)
    syncer = Syncer(runtime, clock=lambda: 1000.0)
    assert syncer.due(1000.0)  # never synced: due now
    syncer.sync()
    interval = runtime.settings.git.pull_interval_s
    assert not syncer.due(1001.0) and syncer.due(1000.0 + interval)
    syncer.after_commit(1001.0)
    syncer.after_commit(1001.5)
    assert not syncer.due(1002.0) and syncer.due(1002.6)  # a quiet second after the last
    for moment in range(1003, 1012):
        syncer.after_commit(float(moment))  # a steady stream still syncs within 10 s
    assert syncer.due(1011.0)
    assert syncer.status()["pending_push"] is True


def test_overlapping_paths_include_folders() -> None:
    changed = ["a/b.txt", "c.txt"]
    assert overlapping(changed, ["a/b.txt", "d.txt"]) == ["a/b.txt"]
    assert overlapping(changed, ["a"]) == ["a"]
    assert overlapping(["a"], ["a/b.txt"]) == ["a/b.txt"]
    assert overlapping(changed, ["ab.txt"]) == []


def test_backoff_grows_and_is_capped() -> None:
    assert [backoff_s(n) for n in (1, 2, 3)] == [2.0, 4.0, 8.0]
    assert backoff_s(50) == 300.0


def test_a_damaged_sync_state_file_is_a_fresh_start(net: Network) -> None:
    a = net.clone("a")
    state = a.root / ".feedbackd" / "sync.json"
    state.parent.mkdir(exist_ok=True)
    for junk in (b"{not json", b"[1]", b"\xff", json.dumps({"failures": "x", "conflict": 3})):
        state.write_bytes(junk if isinstance(junk, bytes) else junk.encode())
        syncer = Syncer(a.runtime())
        assert syncer.memory.failures == 0 and syncer.memory.conflict is None
    assert once(a) == []
    assert memory(a)["outcome"] == "synced"


def test_the_sync_command_reports_as_json(net: Network) -> None:
    a = net.clone("a")
    done = a.cli("sync", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["outcome"] == "synced" and shown["remote"] == "origin"
    assert shown["conflict"] is None and shown["last_sync"] is not None


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("  branch: -f\n", "not a usable branch name"),
        ("  branch: a..b\n", "not a usable branch name"),
        ("  branch: topic.lock\n", "not a usable branch name"),
    ],
)
def test_a_bad_branch_setting_is_an_error_naming_the_key(
    net: Network, extra: str, says: str
) -> None:
    a = net.clone("a")
    a.configure(CONFIG + extra)
    result = Syncer(a.runtime()).sync()
    assert result.outcome == "error" and says in result.message and "git.branch" in result.message
    assert head(a) == net.head()


@pytest.mark.parametrize("remote", ["--upload-pack=touch pwned", "no-such-remote"])
def test_a_remote_that_is_an_option_or_unknown_never_runs_anything(
    net: Network, remote: str
) -> None:
    a = net.clone("a")
    a.configure(f"git:\n  remote: '{remote}'\n")
    result = Syncer(a.runtime()).sync()
    assert result.outcome in ("error", "offline") and result.message
    assert not (a.root / "pwned").exists()
    assert memory(a)["failures"] == 1


def test_the_first_sync_fills_an_empty_remote(tmp_path: Path) -> None:
    bare = tmp_path / "empty.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    site = Site(tmp_path / "first")
    site.configure(f"git:\n  remote: {bare}\n")
    site.write(AGENT, "qi-1.json", draft({"title": "First"}))
    assert once(site) == []
    pushed = subprocess.run(["git", "rev-parse", "main"], cwd=bare, capture_output=True, text=True)
    assert pushed.stdout.strip() == head(site)

"""A chaos run: a curator, buyers and a careless git user around one running daemon.

A seeded random script interleaves drafts, approvals (edits, then the move), rejections with
notes, slow writes, rating files, `kill -9` and restarts of the daemon, `git reset --hard`,
`git revert` of a decision, `git stash -u` / `pop` and agent folder renames; and, for an agent
whose drafts two curators review (SPEC section 15), curators' reviews (each names its curator in
the file) and the settling of disputes. Whatever happened, once the daemon is quiet the
workspace must be consistent with its own HEAD:
- every item is in one folder; every item in `approved/` or `rejected/` has exactly one ledger
  line of that state, and no other item has one;
- the reviewed agent's reviews are each one line and one commit, and agree with where each item
  is (tests/chaos_reviews_kit.py);
- `feedback.json` holds exactly the entries those decisions imply (a correction per changed
  string field, a rejection with its note), none twice;
- every rating sent is stored exactly once and the inbox is empty;
- `git fsck` is clean and `git status` shows nothing (the script leaves no change of its own).
The seed is part of every failure message, so a failing run can be replayed.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.chaos_reviews_kit import CURATORS, REVIEWED, review_problems
from tests.daemon_kit import DaemonProcess, NotifyListener, idle, wait_for
from tests.workspace_kit import Site

SETTLE_MS = 300
PROVIDER, SKILLS = "chaos-provider", ("summarise", "translate")
WRITERS = ("writer-a", "writer-b")
BUYERS = ("buyer-a", "buyer-b", "buyer-c")
QUALITY = {1: "failed", 2: "poor", 3: "acceptable", 4: "good", 5: "excellent"}
SOUL = "# Chaos Provider\n\nA provider of the chaos run.\n\n" + "".join(
    f"## {skill.title()}\n\nDoes {skill}.\n\npricing: 20\n\n" for skill in SKILLS
)
DECISION_EVENTS = ("approve", "reject")
# Every kind of step the script knows, with how often it is picked.
WEIGHTS = {
    "draft": 10,
    "approve": 12,
    "approve_slowly": 3,
    "reject": 5,
    "rate": 8,
    "kill": 2,
    "reset": 1,
    "drop": 1,
    "revert": 2,
    "stash": 2,
    "rename": 1,
    "review": 6,
    "settle_dispute": 2,
}
# A user's git command that met the daemon's index.lock is simply run again, for this long: a
# loaded machine stretches the daemon's short runs of decisions.
GIT_RETRY_S = 15.0


@dataclass
class Chaos:
    """The script's state: what it sent, where it believes things are, what it did."""

    site: Site
    seed: int
    listener: NotifyListener
    rng: random.Random = field(init=False)
    daemon: DaemonProcess | None = None
    next_item: int = 0
    ratings: set[str] = field(default_factory=set)
    done: list[str] = field(default_factory=list)  # the script so far, for the failure message

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def agents(self) -> list[str]:
        """The writers' folders as they are on disk now (renames and resets change them)."""
        return _agent_folders(self.site)

    # --- the daemon ----------------------------------------------------------------------
    def start(self) -> None:
        count = self.listener.count("READY=1")
        self.daemon = DaemonProcess(self.site, self.listener, log_name=f"daemon-{self.seed}.log")
        self.daemon.wait_ready(count + 1, timeout=60)

    def kill(self) -> None:
        assert self.daemon is not None
        self.daemon.kill_group()
        self.start()

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.close()

    # --- what users do -------------------------------------------------------------------
    def folder(self, agent: str, state: str) -> Path:
        return self.site.agent(agent) / state

    @property
    def curated(self) -> list[str]:
        """The agents one curator decides for (the reviewed one has reviews instead)."""
        return [agent for agent in self.agents if agent != REVIEWED]

    def items(self, state: str, agents: list[str] | None = None) -> list[tuple[str, Path]]:
        found = []
        for agent in self.curated if agents is None else agents:
            folder = self.folder(agent, state)
            if folder.is_dir():
                found += [(agent, p) for p in sorted(folder.iterdir()) if p.suffix == ".json"]
        return found

    def new_draft(self) -> None:
        agent = self.rng.choice(self.agents)
        item = f"ch-{self.seed}-{self.next_item:03d}"
        self.next_item += 1
        content = {
            "title": f"Draft {item}",
            "body": f"The body of {item}.\n",
            "seo": {"metaDescription": f"About {item}."},
        }
        doc = {"contentData": content, "originalContentData": json.loads(json.dumps(content))}
        _write_json(self.folder(agent, "queue") / f"{item}.json", doc)
        self.done.append(f"draft {agent}/{item}")

    def approve(self, slowly: bool = False) -> None:
        queued = self.items("queue")
        if not queued:
            return self.new_draft()
        agent, path = self.rng.choice(queued)
        doc = _read_json(path)
        content = doc["contentData"]
        if self.rng.random() < 0.8:
            content["title"] = f"{content['title']} (edited {self.rng.randrange(1000)})"
        if self.rng.random() < 0.4:
            content["seo"]["metaDescription"] = f"Sharper: {path.stem}."
        target = self.folder(agent, "approved") / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if slowly:
            # An editor that writes the file in two goes, the second after a pause shorter than
            # settle_ms: the first half alone must never be decided.
            path.unlink()
            text = json.dumps(doc, indent=2) + "\n"
            half = len(text) // 2
            with open(target, "w", encoding="utf-8") as out:
                out.write(text[:half])
                out.flush()
                time.sleep(self.rng.uniform(0.02, SETTLE_MS / 2000))
                out.write(text[half:])
        else:
            _write_json(path, doc)
            os.rename(path, target)
        self.done.append(f"approve{' slowly' if slowly else ''} {agent}/{path.stem}")
        return None

    def reject(self) -> None:
        queued = self.items("queue")
        if not queued:
            return self.new_draft()
        agent, path = self.rng.choice(queued)
        doc = _read_json(path)
        doc["rejectionFeedback"] = f"Too vague, {path.stem} needs an example"
        _write_json(path, doc)
        target = self.folder(agent, "rejected") / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(path, target)
        self.done.append(f"reject {agent}/{path.stem}")
        return None

    def review(self) -> None:
        """A curator reviews a draft of the reviewed agent waiting in queue/ or review/: the same
        edit or note each time for an item, so that two approvals (or rejections) agree; a
        curator who reviewed it already is refused (an `.error` file, the draft back)."""
        waiting = self.items("queue", [REVIEWED]) + self.items("review", [REVIEWED])
        if not waiting:
            return self.new_draft()
        agent, path = self.rng.choice(waiting)
        doc, curator = _read_json(path), self.rng.choice(CURATORS)
        doc["curator"] = curator
        verdict = "approved" if self.rng.random() < 0.6 else "rejected"
        if verdict == "approved":
            doc["contentData"]["title"] = f"{path.stem}, as the curators agree"
        else:
            doc["rejectionFeedback"] = f"Too vague, {path.stem} needs an example"
        self._move(path, doc, verdict)
        self.done.append(f"review {agent}/{path.stem} {verdict} by {curator}")
        return None

    def settle_dispute(self) -> None:
        """A curator settles a dispute: the `reviews` key dropped, their version moved."""
        disputed = self.items("disputed", [REVIEWED])
        if not disputed:
            return self.review()
        agent, path = self.rng.choice(disputed)
        doc = _read_json(path)
        doc.pop("reviews", None)
        doc["curator"] = self.rng.choice(CURATORS)
        verdict = self.rng.choice(("approved", "rejected"))
        if verdict == "approved":
            doc["contentData"]["title"] = f"{path.stem}, as settled"
        else:
            doc["rejectionFeedback"] = f"{path.stem} is off topic"
        self._move(path, doc, verdict)
        self.done.append(f"settle {agent}/{path.stem} {verdict}")
        return None

    def _move(self, path: Path, doc: dict[str, Any], to: str) -> None:
        """The file edited where it waits, then moved (a curator's editor, then `mv`)."""
        _write_json(path, doc)
        target = self.folder(path.parent.parent.name, to) / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(path, target)

    def rate(self) -> None:
        score = self.rng.randint(1, 5)
        transaction = f"{self.rng.getrandbits(128):032x}"
        transaction = (
            "-".join(
                (
                    transaction[:8],
                    transaction[8:12],
                    "4" + transaction[13:16],
                    "8" + transaction[17:20],
                )
            )
            + "-"
            + transaction[20:32]
        )
        doc = {
            "transaction_id": transaction,
            "provider_agent": PROVIDER,
            "skill_id": self.rng.choice(SKILLS),
            "requester_agent": self.rng.choice(BUYERS),
            "rating": score,
            "result_quality": QUALITY[score],
            "would_reuse": score >= 3,
            "cost_value_ratio": self.rng.choice(["great", "fair", "overpriced"]),
        }
        inbox = self.site.data / "inbox" / "ratings"
        inbox.mkdir(parents=True, exist_ok=True)
        temporary = inbox / f".{transaction}.tmp"
        temporary.write_text(json.dumps(doc))
        os.rename(temporary, inbox / f"{transaction}.json")
        self.ratings.add(transaction)
        self.done.append(f"rate {transaction[:8]}")

    def kill_daemon(self) -> None:
        self.kill()
        self.done.append("kill -9 and restart")

    def reset_hard(self, to: str = "HEAD") -> None:
        """Throw away what is not committed yet (the daemon may be half-way through it), with
        `git clean` as users do, so no untracked copy of a decided item is left behind."""
        self.user_git("reset", "--hard", "-q", to)
        self.user_git("clean", "-fdq", "--", "_data/agents")
        self.done.append(f"git reset --hard {to} && git clean -fd")

    def drop_last_decision(self) -> None:
        """`git reset --hard HEAD~1` when HEAD is a decision: that decision never happened.
        A rating the daemon committed meanwhile is dropped with it: the user threw it away.

        What the reset dropped is read up to ORIG_HEAD, where git's reset leaves the HEAD it
        moved from: HEAD@{1} is that only until the daemon's next commit, which may come right
        after the reset lets go of the index lock (the run then expected ratings the reset took)."""
        head = self.site.git("rev-parse", "HEAD").strip()
        if _event(self.site, head) not in DECISION_EVENTS:
            return
        self.reset_hard(f"{head}~1")
        dropped = self.site.git(
            "log", "--format=%(trailers:key=Feedback-Transaction,valueonly)", f"{head}~1..ORIG_HEAD"
        )
        self.ratings -= set(dropped.split())

    def revert(self) -> None:
        # git refuses to revert over uncommitted changes to the same files: a user lets the
        # daemon finish first, as anyone does before running git by hand.
        self.settle()
        reverted = _reverted(self.site)
        candidates = [c for c in _decision_commits(self.site) if c not in reverted]
        if not candidates:
            return
        commit = self.rng.choice(candidates)
        self.user_git("revert", "--no-edit", commit)
        self.done.append(f"git revert {commit[:8]}")

    def stash(self) -> None:
        """`git stash -u`, a moment, `git stash pop`: a user setting work aside to look at HEAD."""
        before = self.site.git("stash", "list")
        self.user_git("stash", "push", "-u", "-q")
        if self.site.git("stash", "list") == before:
            self.done.append("git stash -u (nothing to stash)")
            return
        time.sleep(self.rng.uniform(0, 0.1))
        self.user_git("stash", "pop", "-q")
        self.done.append("git stash -u, then pop")

    def rename(self) -> None:
        old = self.rng.choice(self.curated)  # the reviewed agent's settings name its folder
        new = f"{old.partition('.')[0]}.{self.rng.randrange(1000)}"
        os.rename(self.site.agent(old), self.site.agent(new))
        self.done.append(f"mv {old} {new}")

    def user_git(self, *args: str) -> None:
        """A user's git command; one that met the daemon's index.lock is run again."""
        deadline = time.monotonic() + GIT_RETRY_S
        while True:
            done = subprocess.run(
                ["git", *args], cwd=self.site.root, capture_output=True, text=True, timeout=60
            )
            if done.returncode == 0:
                return
            # git stash meeting a held index.lock exits 1 saying nothing (git 2.39).
            busy = ("index.lock", "cannot lock ref", "The stash entry is kept")
            other = done.stderr.strip() and not any(sign in done.stderr for sign in busy)
            if other or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}{self.replay()}")

    # --- the run -------------------------------------------------------------------------
    def run(self, steps: int, actions: dict[str, int]) -> None:
        do: dict[str, Callable[[], None]] = {
            "draft": self.new_draft,
            "approve": self.approve,
            "approve_slowly": lambda: self.approve(slowly=True),
            "reject": self.reject,
            "rate": self.rate,
            "kill": self.kill_daemon,
            "reset": self.reset_hard,
            "drop": self.drop_last_decision,
            "revert": self.revert,
            "stash": self.stash,
            "rename": self.rename,
            "review": self.review,
            "settle_dispute": self.settle_dispute,
        }
        names = list(actions)
        weights = [actions[name] for name in names]
        for _ in range(steps):
            do[self.rng.choices(names, weights)[0]]()
            time.sleep(self.rng.choice((0, 0, 0.005, 0.02, 0.06)))

    def settle(self, timeout: float = 60) -> None:
        """Wait until the daemon has committed all there is: nothing left in git status, and
        the daemon idle (after a revert, git status is clean before the daemon regenerates the
        snippet: objects it writes meanwhile would be missing to a concurrent `git fsck`)."""
        self._committed_all(timeout)
        if self.daemon is not None and self.daemon.proc.poll() is None:
            idle(self.daemon, quiet_s=0.5, timeout=timeout)
            self._committed_all(timeout)

    def _committed_all(self, timeout: float) -> None:
        def quiet() -> bool:
            if self.site.git("status", "--porcelain", "--untracked-files=all", "--", "_data"):
                return False
            inbox = self.site.data / "inbox" / "ratings"
            return not inbox.is_dir() or not any(inbox.glob("*.json"))

        try:
            wait_for(quiet, timeout, "the daemon to commit everything")
        except AssertionError as error:
            left = self.site.git("status", "--porcelain", "--untracked-files=all")
            raise AssertionError(f"{error}; left: {left[:2000]}{self.replay()}") from None

    def replay(self) -> str:
        return f"\n(chaos seed {self.seed}; the steps: {self.done})"

    # --- the checks ----------------------------------------------------------------------
    def problems(self) -> list[str]:
        found: list[str] = []
        fsck = subprocess.run(
            ["git", "fsck", "--no-progress"], cwd=self.site.root, capture_output=True, text=True
        )
        if fsck.returncode != 0 or "error" in fsck.stderr:
            found.append(f"git fsck: {fsck.stderr.strip()[:500]}")
        for agent in _agent_folders(self.site):
            found += _agent_problems(self.site, agent)
        if self.site.agent(REVIEWED).is_dir():
            found += review_problems(self.site, REVIEWED)
        found += _rating_problems(self.site, self.ratings)
        return found


FOLDERS = ("queue", "review", "disputed", "approved", "rejected")


def _agent_problems(site: Site, agent: str) -> list[str]:
    folder = site.agent(agent)
    places = [(p.stem, state) for state in FOLDERS for p in _files(folder / state)]
    where = dict(places)
    twice = sorted(item for item, count in Counter(i for i, _ in places).items() if count > 1)
    found = [f"{agent}/{item} is in more than one folder" for item in twice]
    found += _ledger_problems(agent, where, _jsonl(folder / "decisions.jsonl"))
    decided = [
        folder / state / f"{item}.json"
        for item, state in where.items()
        if state in ("approved", "rejected")
    ]
    expected = Counter(entry for path in decided for entry in _implied(path))
    stored = Counter(_key(entry) for entry in _feedback(folder / "feedback.json"))
    if stored != expected:
        missing, extra = expected - stored, stored - expected
        found.append(f"{agent}: feedback.json misses {list(missing)}, has extra {list(extra)}")
    return found


def _ledger_problems(agent: str, where: dict[str, str], ledger: list[dict[str, Any]]) -> list[str]:
    """Each item's ledger lines agree with its folder: its last line is the state it is in
    (`queued`, or no line at all, for a draft), and no decision is recorded twice in a row."""
    lines: dict[str, list[str]] = {}
    for record in ledger:
        lines.setdefault(record["item"], []).append(record["state"])
    found = []
    drafts = {"queue": "queued", "review": "queued", "disputed": "queued"}
    for item in sorted(set(lines) | {i for i, state in where.items() if state not in drafts}):
        states, state = lines.get(item, []), where.get(item, "gone")
        last = states[-1] if states else "queued"
        if last != {**drafts, "gone": last}.get(state, state):
            found.append(f"{agent}/{item} is in {state}/ but its ledger says {states}")
        if any(a != "queued" and b != "queued" for a, b in itertools.pairwise(states)):
            found.append(f"{agent}/{item}: a decision recorded twice: {states}")
    return found


def _implied(path: Path) -> Iterator[tuple[str, ...]]:
    """The entries a decided file implies: its corrections, or its rejection note."""
    doc = _read_json(path)
    item = path.stem
    if path.parent.name == "rejected":
        yield (item, "rejection", "", "", doc.get("rejectionFeedback", ""))
        return
    original, current = doc["originalContentData"], doc["contentData"]
    for name, before, after in (
        ("title", original["title"], current["title"]),
        ("body", original["body"], current["body"]),
        (
            "seo.metaDescription",
            original["seo"]["metaDescription"],
            current["seo"]["metaDescription"],
        ),
    ):
        if before != after:
            yield (item, "correction", name, after, "")


def _key(entry: dict[str, Any]) -> tuple[str, ...]:
    return (
        entry["queueItemId"],
        entry["type"],
        entry.get("field", ""),
        entry.get("corrected", ""),
        entry.get("notes", ""),
    )


def _rating_problems(site: Site, sent: set[str]) -> list[str]:
    stored: Counter[str] = Counter()
    for path in (site.agent(PROVIDER) / "ratings").glob("*/*.jsonl"):
        stored.update(record["transaction_id"] for record in _jsonl(path))
    if stored != Counter(sent):
        missing, extra = Counter(sent) - stored, stored - Counter(sent)
        return [f"ratings: missing {sorted(missing)}, stored twice or unknown {sorted(extra)}"]
    return []


def _agent_folders(site: Site) -> list[str]:
    """Writers' folders: the ones with drafts or decisions (buyers get folders of their own)."""
    marks = ("queue", "review", "disputed", "approved", "rejected", "decisions.jsonl")
    root = site.data / "agents"
    return sorted(p.name for p in root.iterdir() if any((p / mark).exists() for mark in marks))


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.json")) if folder.is_dir() else []


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def _feedback(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text()) if path.exists() else []


def _read_json(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return value


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _event(site: Site, commit: str) -> str:
    trailers = site.trailers(commit)
    return (trailers.get("Feedback-Event") or [""])[0]


def _decision_commits(site: Site) -> list[str]:
    """Decisions since the last folder rename: git cannot revert one made under a folder's old
    name (README, "Undo a decision with git revert")."""
    text = site.git("log", "--format=%H %(trailers:key=Feedback-Event,valueonly,separator=)")
    found = []
    for line in text.splitlines():
        commit, *event = line.split()
        if event == ["rename"]:
            break
        if event in (["approve"], ["reject"]):
            found.append(commit)
    return found


def _reverted(site: Site) -> set[str]:
    text = site.git("log", "--format=%b")
    return {
        line.split()[-1].rstrip(".")
        for line in text.splitlines()
        if line.startswith("This reverts commit ")
    }


def make_site(root: Path) -> Site:
    site = Site(root)
    reviewed = f"review:\n  agents:\n    {REVIEWED}: 2\n"
    site.configure(f"daemon:\n  settle_ms: {SETTLE_MS}\n{reviewed}")
    soul = site.agent(PROVIDER) / "SOUL.md"
    soul.parent.mkdir(parents=True)
    soul.write_text(SOUL.rstrip() + "\n")
    for agent in (*WRITERS, REVIEWED):
        content = {"title": f"First of {agent}", "body": "Body.\n", "seo": {"metaDescription": "."}}
        _write_json(
            site.agent(agent) / "queue" / f"{agent}-first.json",
            {"contentData": content, "originalContentData": content},
        )
    site.git("add", "-A")
    site.git("commit", "-q", "-m", "chaos workspace")
    return site


def end(chaos: Chaos) -> None:
    if chaos.daemon is not None and chaos.daemon.proc.poll() is None:
        chaos.daemon.signal(signal.SIGTERM)
        chaos.daemon.proc.wait(30)

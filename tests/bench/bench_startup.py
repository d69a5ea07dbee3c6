"""Benchmark of a big site's start-up: a fresh clone until READY=1, a restart, an idle `run --once`.

Run: `python -m tests.bench.bench_startup [--files 5000] [--drafts 1000] [--agents 20]
[--decided 0] [--repeat 3] [--keep DIR]`. The big site (the targets are for this one):
`python -m tests.bench.bench_startup --files 100000 --drafts 22000 --agents 200 --decided 10`.

An origin workspace (made by `feedbackd init`) gets one more commit, written with
`git fast-import`, holding `--files` tracked files in all: `--drafts` queued drafts spread over
`--agents` agents, the rest other files of the site. It is cloned afresh (no `.feedbackd/`),
then, in the same run on the same clone:
- `feedbackd run` with NOTIFY_SOCKET pointing at a datagram socket this benchmark reads, as
  systemd would: the time from starting it until READY=1 (the start-up pass of a fresh clone);
- with `--decided`, that many drafts of each agent edited and approved while no daemon runs,
  and recorded by one `run --once` (a catch-up, timed): a history of decisions;
- `feedbackd run` again with `.feedbackd/` in place (a restart), `--repeat` times;
- `feedbackd run --once` with nothing to do, `--repeat` times;
- the daemon's peak resident memory (VmHWM in /proc/PID/status, read before each stop);
- floors on the same clone: `git status` and `git ls-files` (what reading this repository costs
  git itself), and `feedbackd --help` (starting Python and loading the whole command line).
Also checks that the start-up pass recorded what git already had without a commit of its own
(HEAD unchanged) and remembered every draft. Prints a table (measure, value, target, met) with
the ratios to the floors; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.bench.workfolder import in_work_folder

TIMEOUT_S = 600.0
TARGET_FRESH_S, TARGET_RESTART_S, TARGET_ONCE_S, TARGET_RSS_MB = 10.0, 2.0, 0.5, 150.0
FILES_PER_FOLDER = 1000


@dataclass
class Results:
    clone_s: float = 0.0
    catch_up_s: float = 0.0
    decided: int = 0
    fresh_s: float = 0.0
    restart_s: list[float] = field(default_factory=list)
    once_s: list[float] = field(default_factory=list)
    peak_rss_mb: list[float] = field(default_factory=list)
    status_s: list[float] = field(default_factory=list)
    ls_files_s: list[float] = field(default_factory=list)
    version_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# --- the workspace ---------------------------------------------------------------------------
def bench_env(work: Path) -> dict[str, str]:
    """Git and feedbackd see only this benchmark's configuration (HOME is the work folder).

    Python keeps feedbackd's compiled bytecode (in a folder of this run), as an installed
    feedbackd has it: pip compiles it at install. Without it (PYTHONDONTWRITEBYTECODE, or an
    editable install on a read-only tree) every command compiles feedbackd's 100 modules
    again, which costs more than the idle pass itself."""
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "bytecode")
    for name in (
        "FEEDBACKD_CONFIG", "FEEDBACKD_WORKSPACE", "FEEDBACKD_CURATOR", "GIT_DIR",
        "PYTHONDONTWRITEBYTECODE",
    ):  # fmt: skip
        env.pop(name, None)
    env.update(GIT_AUTHOR_NAME="Ada Curator", GIT_AUTHOR_EMAIL="ada@example.org")
    env.update(GIT_COMMITTER_NAME="Ada Curator", GIT_COMMITTER_EMAIL="ada@example.org")
    return env


def git(root: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, input=stdin, check=True, capture_output=True,
        env=bench_env(root.parent),
    )  # fmt: skip
    return done.stdout.decode()


def feedbackd_command(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "feedbackd", "-q", "-w", str(root), *args]


def draft_text(agent: str, item: str, number: int) -> bytes:
    content = {
        "title": f"Draft title {number}",
        "excerpt": f"What {item} of {agent} is about, in one sentence for the listing page.",
        "body": "A paragraph of draft text that the curator reads before deciding.\n" * 4,
    }
    return (json.dumps({"id": item, "contentData": content}, indent=2) + "\n").encode()


def site_file_text(number: int) -> bytes:
    return f"---\ntitle: Page {number}\n---\nThe text of page {number} of the site.\n".encode()


def site_files(args: argparse.Namespace, already: int) -> Iterator[tuple[str, bytes]]:
    """(path, content) of every file of the benchmark's commit: drafts first, then the site."""
    for number in range(args.drafts):
        agent = f"writer-{number % args.agents:03d}"
        item = f"qi-{number:06d}"
        yield f"_data/agents/{agent}/queue/{item}.json", draft_text(agent, item, number)
    for number in range(max(args.files - args.drafts - already, 0)):
        yield (
            f"site/pages/{number // FILES_PER_FOLDER:03d}/page-{number:06d}.md",
            site_file_text(number),
        )


def fast_import_stream(args: argparse.Namespace, already: int) -> bytes:
    """One commit on top of main holding every file, in `git fast-import`'s language."""
    parts = [
        b"commit refs/heads/main\n",
        b"committer Ada Curator <ada@example.org> 1767225600 +0000\n",
    ]
    parts.append(data_block(b"A big site: drafts and pages\n"))
    parts.append(b"from refs/heads/main^0\n")
    for path, content in site_files(args, already):
        parts.append(f"M 100644 inline {path}\n".encode())
        parts.append(data_block(content))
    return b"".join(parts)


def data_block(content: bytes) -> bytes:
    return b"data %d\n%s\n" % (len(content), content)


def build_origin(origin: Path, args: argparse.Namespace) -> None:
    """`feedbackd init`, then one commit with the rest of the files, written by fast-import."""
    origin.mkdir(parents=True)
    env = bench_env(origin.parent)
    subprocess.run(feedbackd_command(origin, "init", str(origin)), check=True, env=env)
    already = len(git(origin, "ls-files").splitlines())
    git(origin, "fast-import", "--quiet", stdin=fast_import_stream(args, already))
    git(origin, "reset", "-q", "--hard")  # the origin's own work tree follows its branch


def fresh_clone(origin: Path, clone: Path) -> float:
    """Clone the origin as a new machine would (no `.feedbackd/`); seconds it took."""
    command = ["git", "clone", "-q", "--no-hardlinks", str(origin), str(clone)]
    return timed(command, clone.parent, bench_env(clone.parent))


# --- the daemon ------------------------------------------------------------------------------
def start_until_ready(root: Path, work: Path) -> tuple[float, float]:
    """Start `feedbackd run` as systemd would and stop it once READY=1 is heard: (seconds from
    start to READY=1, peak resident memory in MB)."""
    path = work / "notify.sock"
    path.unlink(missing_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(path))
        env = {**bench_env(work), "NOTIFY_SOCKET": str(path)}
        with (work / "daemon.log").open("ab") as log:  # a file, not a pipe: it never fills
            started = time.perf_counter()
            daemon = subprocess.Popen(feedbackd_command(root, "run"), env=env, stderr=log)
        try:
            wait_ready(listener, daemon)
            elapsed = time.perf_counter() - started
            peak = peak_rss_mb(daemon.pid)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=TIMEOUT_S)
    return elapsed, peak


def wait_ready(listener: socket.socket, daemon: subprocess.Popen[bytes]) -> None:
    """Read the notify socket until READY=1; fail when the daemon exits or the deadline passes."""
    deadline = time.monotonic() + TIMEOUT_S
    listener.settimeout(0.2)
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise RuntimeError(f"the daemon exited with {daemon.returncode} before READY=1")
        try:
            message = listener.recv(4096).decode()
        except TimeoutError:
            continue
        if "READY=1" in message.splitlines():
            return
    raise TimeoutError("no READY=1 before the deadline")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, check=False, capture_output=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace')}")
    return elapsed


# --- measurements ----------------------------------------------------------------------------
def measure(origin: Path, clone: Path, args: argparse.Namespace, results: Results) -> None:
    work = clone.parent
    env = bench_env(work)
    results.clone_s = fresh_clone(origin, clone)
    head = git(clone, "rev-parse", "HEAD").strip()
    print(f"cloned in {results.clone_s:.1f} s; starting the daemon on the fresh clone", flush=True)
    results.fresh_s, peak = start_until_ready(clone, work)
    results.peak_rss_mb.append(peak)
    check_start_up(clone, head, args, results)
    if args.decided:
        decided = [(f"writer-{n % args.agents:03d}", f"qi-{n:06d}")
                   for n in range(min(args.agents * args.decided, args.drafts))]  # fmt: skip
        approve_while_stopped(clone, decided)
        print(f"catch-up of {len(decided):,} decisions", flush=True)
        results.catch_up_s = timed(feedbackd_command(clone, "run", "--once"), clone, env)
        results.decided = len(decided)
        head = git(clone, "rev-parse", "HEAD").strip()  # what an idle run --once leaves
    for number in range(args.repeat):
        print(f"restart {number + 1} of {args.repeat}", flush=True)
        restart, peak = start_until_ready(clone, work)
        results.restart_s.append(restart)
        results.peak_rss_mb.append(peak)
    for _ in range(args.repeat):
        results.once_s.append(timed(feedbackd_command(clone, "run", "--once"), clone, env))
        results.status_s.append(timed(["git", "status", "--porcelain"], clone, env))
        results.ls_files_s.append(timed(["git", "ls-files"], clone, env))
        results.version_s.append(timed(feedbackd_command(clone, "--help"), clone, env))
    if git(clone, "rev-parse", "HEAD").strip() != head:
        results.problems.append("a run --once with nothing to do made a commit")
    log = (work / "daemon.log").read_text(errors="replace")
    if "Traceback" in log or "error:" in log:
        results.problems.append(f"the daemon logged errors:\n{log[-2000:]}")


def approve_while_stopped(clone: Path, pending: list[tuple[str, str]]) -> None:
    """A curator's edit of each title, then the move to approved/ (no daemon running)."""
    for agent, item in pending:
        folder = clone / "_data" / "agents" / agent
        doc = json.loads((folder / "queue" / f"{item}.json").read_text())
        doc["contentData"]["title"] = f"Edited: {doc['contentData']['title']}"
        (folder / "approved").mkdir(exist_ok=True)
        (folder / "approved" / f"{item}.json").write_text(json.dumps(doc, indent=2) + "\n")
        (folder / "queue" / f"{item}.json").unlink()
    long_ago = time.time() - 3600  # saved well before: nothing waits for daemon.settle_ms
    for agent, item in pending:
        path = clone / "_data" / "agents" / agent / "approved" / f"{item}.json"
        os.utime(path, (long_ago, long_ago))


def check_start_up(clone: Path, head: str, args: argparse.Namespace, results: Results) -> None:
    """The drafts were on record already: no commit, and each one's first version kept."""
    if git(clone, "rev-parse", "HEAD").strip() != head:
        results.problems.append("the start-up pass of a fresh clone made a commit")
    kept = len(remembered(clone))
    if kept != args.drafts:
        results.problems.append(f"{kept} of {args.drafts} drafts remembered after start-up")


def remembered(clone: Path) -> set[str]:
    """The drafts whose first version the daemon keeps: a copy in its agent's snapshot folder,
    or a name in that folder's `.in-git` list (the first version is git's)."""
    found = set()
    for folder in (clone / ".feedbackd" / "snapshots").glob("*"):
        found |= {f"{folder.name}/{path.name}" for path in folder.glob("[!.]*")}
        listed = folder / ".in-git"
        if listed.is_file():
            found |= {f"{folder.name}/{name}" for name in listed.read_text().split()}
    return found


# --- report ----------------------------------------------------------------------------------
Row = tuple[str, str, str, bool | None]  # measure, value, target, met (None: no target)


def rows(results: Results) -> list[Row]:
    status, ls_files = statistics.median(results.status_s), statistics.median(results.ls_files_s)
    version = statistics.median(results.version_s)
    restart, once = statistics.median(results.restart_s), statistics.median(results.once_s)
    peak = max(results.peak_rss_mb)
    fresh = results.fresh_s
    return [
        ("git clone (checkout)", f"{results.clone_s:.1f} s", "", None),
        ("git status (floor)", f"{status:.2f} s", "", None),
        ("git ls-files (floor)", f"{ls_files:.2f} s", "", None),
        ("feedbackd --help (floor)", f"{version:.2f} s", "", None),
        ("fresh clone → READY=1", f"{fresh:.1f} s, {fresh / status:.0f}× git status",
         f"≤ {TARGET_FRESH_S:g} s", fresh <= TARGET_FRESH_S),
        *([(f"catch-up of {results.decided:,} decisions", f"{results.catch_up_s:.1f} s", "",
            None)] if results.decided else []),
        ("restart → READY=1", f"{restart:.2f} s, {restart / status:.0f}× git status",
         f"≤ {TARGET_RESTART_S:g} s", restart <= TARGET_RESTART_S),
        ("run --once, nothing to do", f"{once:.2f} s, {once / version:.1f}× --help",
         f"≤ {TARGET_ONCE_S:g} s", once <= TARGET_ONCE_S),
        ("daemon peak RSS (VmHWM)", f"{peak:.0f} MB", f"≤ {TARGET_RSS_MB:g} MB",
         peak <= TARGET_RSS_MB),
        ("recorded as git has it", "no commit, every draft kept" if not results.problems
         else f"{len(results.problems)} problems", "", not results.problems),
    ]  # fmt: skip


def report(results: Results, args: argparse.Namespace) -> bool:
    """Print the table; True when every target is met."""
    table = rows(results)
    print(f"\nfeedbackd start-up: {args.files:,} tracked files, {args.drafts:,} queued drafts in")
    print(f"{args.agents} agents; restarts and floors: medians of {args.repeat};", end=" ")
    print(f"{os.cpu_count()} CPUs, git {git_version()}")
    print(f"{'measure':<30} {'value':<30} {'target':<10} met")
    for name, value, target, met in table:
        mark = "" if met is None else ("yes" if met else "NO")
        print(f"{name:<30} {value:<30} {target:<10} {mark}")
    for problem in results.problems:
        print(f"problem: {problem}")
    return all(met for *_, met in table if met is not None)


def git_version() -> str:
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.split()[-1] if done.stdout else "?"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_startup", description=__doc__
    )
    parser.add_argument("--files", type=int, default=5000, help="tracked files in the workspace")
    parser.add_argument("--drafts", type=int, default=1000, help="queued drafts among them")
    parser.add_argument("--agents", type=int, default=20, help="agents the drafts belong to")
    parser.add_argument("--decided", type=int, default=0, help="drafts decided, each agent")
    parser.add_argument("--repeat", type=int, default=3, help="restarts and idle runs measured")
    parser.add_argument("--keep", type=Path, help="build the workspaces here and keep them")
    args = parser.parse_args(argv)
    if args.agents < 1 or args.drafts < 0 or args.repeat < 1:
        parser.error("--agents and --repeat must be at least 1, --drafts at least 0")
    return args


def run(args: argparse.Namespace, work: Path) -> bool:
    origin, clone = work / "origin", work / "clone"
    print(f"building a workspace of {args.files:,} tracked files in {origin}", flush=True)
    build_origin(origin, args)
    results = Results()
    measure(origin, clone, args, results)
    return report(results, args)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return in_work_folder(lambda work: run(args, work), args.keep, "feedbackd-bench-")


if __name__ == "__main__":
    sys.exit(main())

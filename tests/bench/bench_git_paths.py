"""Benchmark of the ways to commit one changed file, and to read objects, in process: GitPython,
pygit2 and feedbackd's own path, against the `git add` + `git commit` floor.

Run: `python -m tests.bench.bench_git_paths [--files 2000 [100000 ...]] [--samples 30 [10 ...]]
[--reads 2000] [--keep DIR]`.

For each `--files` size a repository is built by `git fast-import` (gc.auto=0) and checked out:
half the files are drafts, `_data/agents/writer-NN/queue/item-NNNNN.json` (up to 50 agents), the
other half pages, `docs/section-NNN/page-NNNNN.md` (500 a folder). Each way then commits ONE
changed file (new content every time) of its own in `_data/agents/writer-07/queue/`, `--samples`
times, the ways in turns sample by sample, so that the machine's other work weighs on each alike
(the first commit of each, which starts its helpers and loads its modules, is not counted):
- floor: `git add <file>` + `git commit -q -m x`, as subprocesses: what a user would do;
- GitPython, with its default object database (reads through `git cat-file`) and again with
  its pure-Python one (GitDB, reading the packs itself; GitPython 3.2 deprecates it): the blob by
  `repo.odb.store(IStream)` (the file's bytes as they are: no line-ending or `ident` filter,
  which `git add` and libgit2 apply), each tree on the path edited through `Tree.cache`
  (TreeModifier `add` + `set_done`), serialized and stored, `Commit.create_from_tree(head=False)`,
  then the branch moved by `repo.head.reference.set_commit(..., logmsg=...)` (both reflogs; no
  compare with the commit read, which git's update-ref and libgit2 make); the Repo opened once,
  the index untouched;
- pygit2 (libgit2): `create_blob_fromworkdir`, a TreeBuilder up the path, `create_commit` with
  the branch moved (libgit2 checks that it still names the parent); opened once, index untouched;
- feedbackd: `GitRepo(root).commit_paths([rel], message, author)`, opened once: the real path,
  the user's index entry following the commit included.
GitPython and pygit2 leave the index behind their commit: this benchmark brings its entry in line
afterwards by `git update-index -- <file>`, as feedbackd does after its commit (the floor's next
`git commit` would otherwise undo their change), timed apart and shown under the table.
Each commit is checked: HEAD's parent is the HEAD before it, it changes that one path only,
`git rev-parse HEAD:<rel>` equals `git hash-object <file>`, and the index agrees with HEAD there;
`git fsck --no-dangling` at the end of each size.

Then `--reads` blobs by id (a sample of the files, the ways in turns object by object):
GitPython's `repo.odb.stream(binsha).read()` with each object database, feedbackd's
`GitBatch.read` (its long-lived `git cat-file --batch`) and pygit2's `repo[oid].read_raw()`;
all must give the same bytes. And the import time of `git` (GitPython), `pygit2` and feedbackd's
git edge (`python -X importtime`, the cumulative figure of the top-level package, median of 5).

Prints per size each way's median and p90 per commit, its ratio to the floor's median and the
request's targets (≤ 1.0× the floor at 2,000 files, ≤ 0.3× at 100,000), then µs per object read,
then the import times. Figures only: exits 1 when a check of the results fails, never on a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

import git
import pygit2
from git.db import GitDB
from git.objects import Blob, Commit, Tree
from gitdb import IStream

from feedbackd.core.commitmsg import build_message
from feedbackd.core.people import Person
from feedbackd.edges.git.batch import GitBatch
from feedbackd.edges.git.repo import GitRepo
from tests.bench.bench_daemon import p90
from tests.bench.bench_startup import (
    bench_env,
    data_block,
    draft_text,
    git_version,
    site_file_text,
)
from tests.bench.workfolder import in_work_folder

WRITERS, PAGES_PER_FOLDER, CHANGED_WRITER = 50, 500, 7
AUTHOR = Person("Ada Curator", "ada@example.org")
TARGETS = {2000: 1.0, 100_000: 0.3}  # × the floor's median, by size (the request's)
IMPORT_RUNS = 5
IMPORTED = ("git", "pygit2", "feedbackd.edges.git.repo")
FLOOR = "git add + git commit (floor)"
# The environment git and the libraries see, in this process too: the run's own HOME, no system
# configuration, Ada as author and committer.
ENV_KEYS = ("HOME", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
            "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")  # fmt: skip


# --- the repository --------------------------------------------------------------------------
def writers_for(files: int) -> int:
    return max(1, min(WRITERS, files // 2 // 10))


def tracked_files(files: int) -> Iterator[tuple[str, bytes]]:
    """(path, content) of every file: drafts spread over the agents, then pages."""
    drafts, writers = files // 2, writers_for(files)
    for number in range(drafts):
        agent, item = f"writer-{number % writers:02d}", f"item-{number:05d}"
        yield f"_data/agents/{agent}/queue/{item}.json", draft_text(agent, item, number)
    for number in range(files - drafts):
        folder = f"docs/section-{number // PAGES_PER_FOLDER:03d}"
        yield f"{folder}/page-{number:05d}.md", site_file_text(number)


def changed_paths(files: int, count: int) -> list[str]:
    """One draft of the same agent for each way: `count` of them, all in one queue/ folder."""
    writers = writers_for(files)
    agent = min(CHANGED_WRITER, writers - 1)
    numbers = [agent + writers * way for way in range(count)]
    return [f"_data/agents/writer-{agent:02d}/queue/item-{number:05d}.json" for number in numbers]


def build(root: Path, files: int) -> float:
    """The repository of `files` files, its work tree and index checked out; seconds taken."""
    started = time.perf_counter()
    root.mkdir(parents=True)
    git_in(root, "init", "-q", "-b", "main")
    git_in(root, "config", "gc.auto", "0")
    parts = [b"commit refs/heads/main\n",
             b"committer Ada Curator <ada@example.org> 1767225600 +0000\n",
             data_block(b"A site: drafts and pages\n")]  # fmt: skip
    for path, content in tracked_files(files):
        parts.append(f"M 100644 inline {path}\n".encode())
        parts.append(data_block(content))
    git_in(root, "fast-import", "--quiet", stdin=b"".join(parts))
    git_in(root, "reset", "-q", "--hard")
    return time.perf_counter() - started


def git_in(root: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=root, input=stdin, capture_output=True,
                          env=bench_env(root.parent), check=False)  # fmt: skip
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


# --- the ways to commit ----------------------------------------------------------------------
class Way:
    """One way to commit a changed file; `touches_index`: it brings the index along itself."""

    name = ""
    touches_index = True

    def commit(self, rel: str, message: str) -> None:
        raise NotImplementedError


class Floor(Way):
    name = FLOOR

    def __init__(self, root: Path) -> None:
        self.root, self.env = root, bench_env(root.parent)

    def commit(self, rel: str, message: str) -> None:
        for command in (["git", "add", "--", rel], ["git", "commit", "-q", "-m", "x"]):
            subprocess.run(command, cwd=self.root, env=self.env, check=True, capture_output=True)


class GitPythonWay(Way):
    touches_index = False

    def __init__(self, repo: git.Repo, name: str) -> None:
        self.repo, self.name = repo, name
        self.actor = git.Actor(AUTHOR.name, AUTHOR.email)
        assert repo.working_tree_dir is not None
        self.work_tree = Path(repo.working_tree_dir)

    def commit(self, rel: str, message: str) -> None:
        repo = self.repo
        content = (self.work_tree / rel).read_bytes()
        sha = repo.odb.store(IStream(Blob.type, len(content), BytesIO(content))).binsha
        head = repo.head.commit
        *folders, _ = names = rel.split("/")
        trees = [head.tree]
        for folder in folders:
            below = trees[-1] / folder
            assert isinstance(below, Tree)
            trees.append(below)
        mode = Blob.file_mode
        for tree, name in reversed(list(zip(trees, names, strict=True))):
            tree.cache.add(sha, mode, name, force=True).set_done()
            listing = BytesIO()
            tree._serialize(listing)  # GitPython's own serializer: Tree has no public one
            data = listing.getvalue()
            sha = repo.odb.store(IStream(Tree.type, len(data), BytesIO(data))).binsha
            mode = Tree.tree_id << 12
        new = Commit.create_from_tree(repo, Tree(repo, sha), message, parent_commits=[head],
                                      head=False, author=self.actor,
                                      committer=self.actor)  # fmt: skip
        repo.head.reference.set_commit(new, logmsg=f"commit: {message.splitlines()[0]}")


class Pygit2Way(Way):
    name = "pygit2 (libgit2)"
    touches_index = False

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo

    def commit(self, rel: str, message: str) -> None:
        repo = self.repo
        oid = repo.create_blob_fromworkdir(rel)
        head = repo.head
        parent = head.target
        *folders, _ = names = rel.split("/")
        trees = [repo[parent].peel(pygit2.Tree)]
        for folder in folders:
            trees.append(trees[-1][folder].peel(pygit2.Tree))
        mode = pygit2.enums.FileMode.BLOB
        for tree, name in reversed(list(zip(trees, names, strict=True))):
            builder = repo.TreeBuilder(tree)
            builder.insert(name, oid, mode)
            oid, mode = builder.write(), pygit2.enums.FileMode.TREE
        person = pygit2.Signature(AUTHOR.name, AUTHOR.email)
        repo.create_commit(head.name, person, person, message, oid, [parent])


class FeedbackdWay(Way):
    name = "feedbackd GitRepo.commit_paths"

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo

    def commit(self, rel: str, message: str) -> None:
        if self.repo.commit_paths([rel], message, AUTHOR) is None:
            raise RuntimeError(f"feedbackd committed nothing for {rel}")


def pure_python_repo(root: Path) -> git.Repo:
    """GitPython with its pure-Python object database (GitDB), which GitPython 3.2 deprecates
    (it warns when one is opened): measured all the same, beside the default."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return git.Repo(root, odbt=GitDB)


def open_ways(root: Path, stack: ExitStack) -> list[Way]:
    """Every way, each with its repository opened once, closed by `stack`."""
    default = stack.enter_context(git.Repo(root))
    pure = stack.enter_context(pure_python_repo(root))
    libgit2 = pygit2.Repository(str(root))
    stack.callback(libgit2.free)
    ours = stack.enter_context(GitRepo(root))
    return [
        Floor(root),
        GitPythonWay(default, "GitPython, odb git cat-file (default)"),
        GitPythonWay(pure, "GitPython, odb GitDB (pure Py., deprecated)"),
        Pygit2Way(libgit2),
        FeedbackdWay(ours),
    ]


# --- committing, with the checks -------------------------------------------------------------
@dataclass
class SizeResults:
    files: int
    samples: int
    build_s: float = 0.0
    commit_s: dict[str, list[float]] = field(default_factory=dict)
    index_s: list[float] = field(default_factory=list)  # follow_index after GitPython, pygit2
    read_s: dict[str, list[float]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def change(root: Path, rel: str, way: str, number: int) -> str:
    """New content for `rel`; the message of its commit."""
    item = Path(rel).stem
    content = {"id": item, "way": way, "sample": number, "contentData": {"title": f"{number}"}}
    (root / rel).write_text(json.dumps(content, indent=2) + "\n")
    agent = rel.split("/")[2]
    return build_message("draft", agent, item, trailers=[("Feedback-Item", item)])


def check_commit(root: Path, rel: str, before: str, way: Way) -> tuple[str, list[str]]:
    """HEAD after `way` committed `rel` on `before`; what is wrong with it."""
    head, parent, blob = git_in(root, "rev-parse", "HEAD", "HEAD^", f"HEAD:{rel}").split()
    problems = []
    if parent != before:
        problems.append(f"{way.name}: the commit's parent is {parent[:12]}, not {before[:12]}")
    if blob != git_in(root, "hash-object", "--", rel).strip():
        problems.append(f"{way.name}: HEAD:{rel} is not the file's content")
    names = git_in(root, "diff-tree", "-r", "--name-only", "--no-commit-id", "HEAD^", "HEAD")
    if names.split() != [rel]:
        problems.append(f"{way.name}: the commit changed {names.split()}, not [{rel!r}]")
    if git_in(root, "diff-index", "--cached", "--name-only", "HEAD", "--", rel).strip():
        problems.append(f"{way.name}: the index of {rel} differs from HEAD")
    return head, problems


def measure_commits(root: Path, ways: list[Way], samples: int, results: SizeResults) -> None:
    """Each way's commits, in turns sample by sample; the first of each is not counted."""
    rels = dict(zip((way.name for way in ways), changed_paths(results.files, len(ways)),
                    strict=True))  # fmt: skip
    head = git_in(root, "rev-parse", "HEAD").strip()
    results.commit_s = {way.name: [] for way in ways}
    for number in range(-1, samples):
        for way in ways:
            rel = rels[way.name]
            message = change(root, rel, way.name, number)
            started = time.perf_counter()
            way.commit(rel, message)
            elapsed = time.perf_counter() - started
            follow_s = 0.0 if way.touches_index else follow_index(root, rel)
            head, problems = check_commit(root, rel, head, way)
            results.problems += problems
            if number >= 0:
                results.commit_s[way.name].append(elapsed)
                if follow_s:
                    results.index_s.append(follow_s)


def follow_index(root: Path, rel: str) -> float:
    """Bring the index entry of `rel` in line with the commit of a way that left it behind
    (GitPython, pygit2), as feedbackd does after its own: `git update-index`; seconds taken."""
    started = time.perf_counter()
    git_in(root, "update-index", "--", rel)
    return time.perf_counter() - started


# --- reading ---------------------------------------------------------------------------------
def readers(root: Path, stack: ExitStack) -> dict[str, Callable[[str], bytes]]:
    """Each way to read an object by its id (hex), opened once."""
    default = stack.enter_context(git.Repo(root))
    pure = stack.enter_context(pure_python_repo(root))
    libgit2 = pygit2.Repository(str(root))
    stack.callback(libgit2.free)
    batch = GitBatch(root, root / ".git")
    stack.callback(batch.close)

    def ours(sha: str) -> bytes:
        found = batch.read(sha)
        assert found is not None, sha
        return found.content

    return {
        "GitPython odb.stream().read(), git cat-file": lambda sha: default.odb.stream(
            bytes.fromhex(sha)
        ).read(),
        "GitPython odb.stream().read(), GitDB": lambda sha: pure.odb.stream(
            bytes.fromhex(sha)
        ).read(),
        "feedbackd GitBatch.read (cat-file --batch)": ours,
        "pygit2 repo[oid].read_raw()": lambda sha: libgit2[sha].read_raw(),
    }


def measure_reads(root: Path, count: int, results: SizeResults) -> None:
    """`count` blobs of HEAD read by id, each way in turns object by object; the first 50
    objects once before, not counted. Every way must give the same bytes."""
    listing = git_in(root, "ls-tree", "-r", "--format=%(objectname)", "HEAD").split()
    ids = random.Random(0).sample(sorted(set(listing)), min(count, len(set(listing))))
    with ExitStack() as stack:
        ways = readers(root, stack)
        for sha in ids[:50]:
            for read in ways.values():
                read(sha)
        results.read_s = {name: [] for name in ways}
        for sha in ids:
            seen = set()
            for name, read in ways.items():
                started = time.perf_counter()
                content = read(sha)
                results.read_s[name].append(time.perf_counter() - started)
                seen.add(content)
            if len(seen) != 1:
                results.problems.append(f"the ways read {sha} differently")


def import_ms(module: str) -> float:
    """The median over IMPORT_RUNS of `import module`'s cumulative time, its parent packages
    included (`python -X importtime`, a new process each; a first run not counted)."""
    command = [sys.executable, "-X", "importtime", "-c", f"import {module}"]
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPYCACHEPREFIX"}
    times = []
    for run in range(IMPORT_RUNS + 1):
        done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        rows = [line.split("|") for line in done.stderr.splitlines()
                if line.startswith("import time:")]  # fmt: skip
        top = {parts[2].strip(): int(parts[1]) for parts in rows[1:]
               if not parts[2].startswith("  ")}  # a nested import is indented  # fmt: skip
        total = sum(cumulative for name, cumulative in top.items()
                    if name == module or module.startswith(name + "."))  # fmt: skip
        if run > 0:
            times.append(total / 1000)
    return statistics.median(times)


# --- the report ------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def target_cell(files: int, ratio: float) -> str:
    target = TARGETS.get(files)
    if target is None:
        return ""
    return f"≤ {target:.1f}×: {'met' if ratio <= target else 'missed'}"


def report_size(results: SizeResults, reads: int) -> None:
    print(f"\n{results.files:,} files (built in {results.build_s:.1f} s): one changed file "
          f"committed, {results.samples} samples of each way in turns")  # fmt: skip
    print(f"{'way':46}{'median':>11}{'p90':>11}{'× floor':>9}   target (× floor median)")
    floor = statistics.median(results.commit_s[FLOOR])
    for name, times in results.commit_s.items():
        median = statistics.median(times)
        cell = "" if name == FLOOR else target_cell(results.files, median / floor)
        print(f"{name:46}{ms(median):>11}{ms(p90(times)):>11}{median / floor:8.2f}×   {cell}")
    index, spread = statistics.median(results.index_s), ms(p90(results.index_s))
    print(f"{'the index following: git update-index':46}{ms(index):>11}{spread:>11}"
          f"{index / floor:8.2f}×   (in feedbackd's row only)")  # fmt: skip
    count = len(next(iter(results.read_s.values()), []))
    print(f"\nreads of {count:,} blobs by id (of {reads:,} asked), in turns, µs per object")
    print(f"{'way':46}{'median':>9}{'p90':>9}{'mean':>9}")
    for name, times in results.read_s.items():
        micro = [time_s * 1e6 for time_s in times]
        print(f"{name:46}{statistics.median(micro):9.1f}{p90(micro):9.1f}"
              f"{statistics.fmean(micro):9.1f}")  # fmt: skip


def report_imports(imports: dict[str, float]) -> None:
    print(f"\nimport time, median of {IMPORT_RUNS} new processes (cumulative, -X importtime)")
    for module, milliseconds in imports.items():
        note = " (loads pygit2 on a commit's first use)" if module.startswith("feedbackd") else ""
        print(f"{'import ' + module:46}{milliseconds:8.1f} ms{note}")


def header() -> None:
    print(f"{os.cpu_count()} CPUs, Python {platform.python_version()}, git {git_version()}, "
          f"GitPython {git.__version__}, pygit2 {pygit2.__version__} "
          f"(libgit2 {pygit2.LIBGIT2_VERSION})")  # fmt: skip


# --- running ---------------------------------------------------------------------------------
def run_size(work: Path, files: int, samples: int, reads: int) -> SizeResults:
    results = SizeResults(files, samples)
    root = work / f"repo-{files}"
    print(f"building {files:,} files in {root}", flush=True)
    results.build_s = build(root, files)
    print(f"built in {results.build_s:.1f} s; {samples} commits of each way", flush=True)
    with ExitStack() as stack:
        measure_commits(root, open_ways(root, stack), samples, results)
    measure_reads(root, reads, results)
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=root, capture_output=True,
                          text=True, env=bench_env(work), check=False)  # fmt: skip
    if fsck.returncode != 0:
        results.problems.append(f"git fsck at {files:,} files: {fsck.stdout}{fsck.stderr}")
    report_size(results, reads)
    return results


def run(work: Path, args: argparse.Namespace) -> bool:
    os.environ.update({key: bench_env(work)[key] for key in ENV_KEYS})
    header()
    samples = args.samples + [args.samples[-1]] * len(args.files)
    problems = []
    for files, count in zip(args.files, samples, strict=False):
        problems += run_size(work, files, count, args.reads).problems
    report_imports({module: import_ms(module) for module in IMPORTED})
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return not problems


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.bench_git_paths",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--files", type=int, nargs="+", default=[2000, 100_000],
                        help="repository sizes, each on a repository of its own")  # fmt: skip
    parser.add_argument("--samples", type=int, nargs="+", default=[30],
                        help="commits of each way: one for all sizes, or one each")  # fmt: skip
    parser.add_argument("--reads", type=int, default=2000, help="blobs read by id by each way")
    parser.add_argument("--keep", type=Path, help="build the repositories here and keep them")
    args = parser.parse_args(argv)
    if min(args.files) < 100 or min(args.samples) < 1 or args.reads < 1:
        parser.error("--files needs 100 or more, --samples and --reads 1 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return in_work_folder(lambda work: run(work, args), args.keep, "feedbackd-bench-")


if __name__ == "__main__":
    sys.exit(main())

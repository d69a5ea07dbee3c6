"""Rating month files read whole for the index: in bulk, and on every core when there are many.

The rating index of a fresh clone is built from every month file (300 MB for a million
ratings). Each file is read, fingerprinted and summed up by `feedbackd.core.ratings.monthscan`;
with more than `PARALLEL_MIN_BYTES` to read and more than one core, worker processes share the
files.

A worker is a fresh interpreter (`python -S -c ...`) that imports only this module and the light
pure modules it needs: not a fork (the daemon's other threads may hold locks) and not
`multiprocessing`'s spawn, which would run the caller's main script again in every worker. It
is dealt one job at a time, a length-prefixed pickle on stdin, and answers one per file on
stdout; a worker that is done gets the next job, so that one slowed down by other work on the
machine takes fewer. If workers cannot be had or one fails, the files not yet read are read here.

A file that the bulk reading cannot sum up comes back without a summary, for the caller to read
line by line, warnings and all.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import pickle
import selectors
import struct
import subprocess
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from feedbackd.core.ratings.monthscan import Summary, summarise
from feedbackd.edges.files import open_plain_file, read_file_bytes

log = logging.getLogger(__name__)

PARALLEL_MIN_BYTES = 32 * 1024 * 1024  # below this, starting workers costs more than it saves
MAX_WORKERS = 4


@dataclass(frozen=True)
class Job:
    """One month file to read whole, and the decay its tally is wanted with."""

    path: Path
    provider: str
    skill: str
    decay_days: float
    size: int  # its size when it was listed: the bigger files go first
    fingerprint: bool = True  # False: a file that is not expected to grow (an old month)


@dataclass(frozen=True)
class Read:
    """What reading a month file whole found."""

    size: int
    digest: bytes | None  # of the whole file when it ends in a newline and may grow by appends
    summary: Summary | None  # None: a line needs reading one by one


def read_bytes(path: Path) -> bytes:
    """A month file's bytes; one removed since it was listed reads as empty."""
    try:
        return read_file_bytes(path)
    except FileNotFoundError:
        return b""


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(frozen=True)
class Appended:
    """What was appended to a file after the part already read."""

    data: bytes
    first_line: int  # the line number its first line has in the file
    digest: bytes  # of the whole file as it is now


_CHUNK = 64 * 1024  # the part already read is fingerprinted a chunk at a time, never held whole


def read_appended(path: Path, size: int, known: bytes) -> Appended | None:
    """What was appended to a file whose first `size` bytes had the digest `known` when they
    were read; None when those bytes changed (a pull, a merge, a hand edit) or are gone."""
    hasher = hashlib.blake2b(digest_size=16)
    newlines = 0
    try:
        with open_plain_file(path) as file:
            left = size
            while left:
                chunk = file.read(min(left, _CHUNK))
                if not chunk:
                    return None  # it shrank
                hasher.update(chunk)
                newlines += chunk.count(b"\n")
                left -= len(chunk)
            if hasher.digest() != known:
                return None
            data = file.read()
    except (FileNotFoundError, IsADirectoryError):
        return None
    hasher.update(data)
    return Appended(data, newlines + 1, hasher.digest())


def summary_of(data: bytes, job: Job) -> Summary | None:
    """The file's summary, or None when it must be read line by line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return summarise(text, job.provider, job.skill, job.decay_days)


def read_whole(job: Job) -> Read:
    data = read_bytes(job.path)
    ends_a_line = data.endswith(b"\n") or not data
    whole = digest(data) if job.fingerprint and ends_a_line else None
    return Read(len(data), whole, summary_of(data, job))


def read_all(jobs: Sequence[Job]) -> Iterator[tuple[Job, Read | None]]:
    """Each job with what its file held, as soon as it is read (in no particular order); None
    when a worker could not read it (the caller reads it again, and sees why)."""
    workers = min(_cores(), MAX_WORKERS, len(jobs))
    pending = set(range(len(jobs)))
    if workers >= 2 and sum(job.size for job in jobs) >= PARALLEL_MIN_BYTES:
        try:
            for at, read in _read_in_workers(jobs, workers):
                pending.discard(at)
                yield jobs[at], read
        except (OSError, ValueError, EOFError, pickle.UnpicklingError) as exc:
            log.info("reading rating files in worker processes failed (%s); reading them here", exc)
    yield from ((jobs[at], read_whole(jobs[at])) for at in sorted(pending))


def serve() -> None:
    """A worker: one job at a time from stdin, its answer on stdout, until stdin ends."""
    inbox, out = sys.stdin.buffer, sys.stdout.buffer
    while (message := _read_frame(inbox)) is not None:
        at, job = pickle.loads(message)
        try:
            read: Read | None = read_whole(job)
        except OSError:
            read = None
        out.write(_frame((at, read)))
        out.flush()


_FRAME = struct.Struct("<Q")
_WORKER = "from feedbackd.edges.monthfiles import serve; serve()"
JOBS_AHEAD = 2  # jobs a worker holds: one in hand, one waiting, so it never idles on a reply


def _frame(value: object) -> bytes:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return _FRAME.pack(len(data)) + data


def _read_frame(stream: IO[bytes]) -> bytes | None:
    header = stream.read(_FRAME.size)
    if len(header) < _FRAME.size:
        return None
    (size,) = _FRAME.unpack(header)
    return stream.read(size)


def _read_in_workers(jobs: Sequence[Job], workers: int) -> Iterator[tuple[int, Read | None]]:
    """Jobs are dealt as workers finish them, biggest first: a worker slowed down by other work
    on the machine takes fewer, and all of them end together."""
    # Where this package lies, so that a worker imports this very code without site-packages.
    home = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [home, os.environ.get("PYTHONPATH")])),
    }
    waiting = deque(sorted(range(len(jobs)), key=lambda at: jobs[at].size, reverse=True))
    children: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(workers):
            child = subprocess.Popen(
                [sys.executable, "-S", "-c", _WORKER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
            children.append(child)
            for _ in range(JOBS_AHEAD):
                _deal(child, jobs, waiting)
        yield from _answers(children, jobs, waiting)
        status = max(abs(child.wait()) for child in children)
        if status:
            raise OSError(f"a worker process ended with status {status}")
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
            for stream in (child.stdin, child.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()


def _deal(child: subprocess.Popen[bytes], jobs: Sequence[Job], waiting: deque[int]) -> None:
    """The next job to this worker; when none is left, its stdin ends, and so will it."""
    assert child.stdin is not None
    if child.stdin.closed:
        return
    if waiting:
        at = waiting.popleft()
        child.stdin.write(_frame((at, jobs[at])))
        child.stdin.flush()
    else:
        child.stdin.close()


def _answers(
    children: list[subprocess.Popen[bytes]], jobs: Sequence[Job], waiting: deque[int]
) -> Iterator[tuple[int, Read | None]]:
    """The answers of all workers, as they come; each answer earns its worker a new job."""
    with selectors.DefaultSelector() as selector:
        buffers: dict[int, bytearray] = {}
        for child in children:
            assert child.stdout is not None
            selector.register(child.stdout, selectors.EVENT_READ, child)
            buffers[child.stdout.fileno()] = bytearray()
        while selector.get_map():
            for key, _ in selector.select():
                stream: IO[bytes] = key.fileobj  # type: ignore[assignment]
                chunk = os.read(stream.fileno(), 1 << 20)
                if not chunk:
                    selector.unregister(stream)
                    continue
                for answer in _frames(buffers[stream.fileno()], chunk):
                    _deal(key.data, jobs, waiting)
                    yield answer


def _frames(buffer: bytearray, chunk: bytes) -> Iterator[tuple[int, Read | None]]:
    """The whole answers in buffer + chunk; what is left of a cut one stays in buffer."""
    buffer += chunk
    while len(buffer) >= _FRAME.size:
        (size,) = _FRAME.unpack_from(buffer)
        if len(buffer) < _FRAME.size + size:
            return
        answer: tuple[int, Read | None] = pickle.loads(buffer[_FRAME.size : _FRAME.size + size])
        del buffer[: _FRAME.size + size]
        yield answer


def _cores() -> int:
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1

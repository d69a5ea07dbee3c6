"""A commit's objects written as one pack file, kept from git's repacks until HEAD names it.

A loose object is a file of its own, and on ext4 making a file is most of what storing a small
object costs (0.3–0.6 ms, more just after many files were deleted). A decision stores about a
dozen objects (four files, seven trees, the commit) where `git add` + `git commit` of one file
store four; as one pack and its index they are two files: 0.8 ms instead of 7 ms here.

The format is git's own (gitformat-pack(5)): a version 2 pack of whole objects (no deltas) and a
version 2 index, each written under a temporary name and renamed, the pack before its index (git
finds packs by their index). Git and libgit2 look for new packs when an object is not in those
they know, so a git process started before the pack finds its objects.

Until HEAD names its commit, nothing reaches a new pack's objects, and a user's `git repack -a
-d` (or `gc`) that starts in that moment would delete the pack with the packs it replaces. So a
pack is written the way `git fetch` writes one: its `.keep` file first, which every repack
leaves alone, removed once the commit is on the branch (release). A `.keep` left by a process
that died is removed by the next one (clear_stale_keeps). feedbackd never merges or deletes a
pack itself: git's own `repack --geometric` does (edges/git/upkeep.py). SHA-1 repositories only:
the in-process path leaves others to git (native.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import struct
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from feedbackd.edges.files import read_file_text
from feedbackd.edges.process import pid_alive

_KIND_NUMBERS = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}
_INDEX_MAGIC = b"\377tOc"
# A `.keep` file's first word, then the pid and host of the process that holds it (`git fetch`
# writes `fetch-pack <pid> on <host>`): what tells a keep of ours that outlived its process.
KEEP_WORD = "feedbackd"


class PackedObject(NamedTuple):
    """One object as it stands in a pack: its id, its entry's bytes and their CRC-32."""

    oid: bytes
    entry: bytes
    crc: int


def object_id(kind: str, content: bytes) -> str:
    """The id git gives an object of `kind` holding `content`."""
    return hashlib.sha1(b"%s %d\0" % (kind.encode(), len(content)) + content).hexdigest()


def packed(kind: str, content: bytes) -> PackedObject:
    """The object as a pack entry: its kind and size, then its content, compressed."""
    size = len(content)
    header = bytearray()
    byte = (_KIND_NUMBERS[kind] << 4) | (size & 0x0F)
    size >>= 4
    while size:
        header.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    header.append(byte)
    entry = bytes(header) + zlib.compress(content, 1)  # small objects: speed over size
    return PackedObject(bytes.fromhex(object_id(kind, content)), entry, zlib.crc32(entry))


def write_pack(pack_dir: Path, objects: Iterable[PackedObject]) -> str:
    """Write `objects` (each once) as a pack and its index in `pack_dir`, with a `.keep` file
    written before either, so that no repack deletes the pack until release(name); the pack's
    name. The entries are written as they are, not joined into one more copy of them all."""
    unique = list({obj.oid: obj for obj in objects}.values())
    header = b"PACK" + struct.pack(">II", 2, len(unique))
    digest, offsets, offset = hashlib.sha1(header), [], len(header)
    for obj in unique:
        digest.update(obj.entry)
        offsets.append(offset)
        offset += len(obj.entry)
    checksum = digest.digest()
    name = f"pack-{checksum.hex()}"
    index = _index(sorted(zip(unique, offsets, strict=True)), checksum)
    body = [header, *(obj.entry for obj in unique), checksum]
    keep, pack = pack_dir / f"{name}.keep", pack_dir / f"{name}.pack"
    already_there = pack.exists()  # the same objects packed before: that pack stays, whatever
    keep.write_text(f"{KEEP_WORD} {os.getpid()} on {socket.gethostname()}\n")
    try:
        _put(pack_dir, "tmp_pack_", pack.name, body)
        _put(pack_dir, "tmp_idx_", f"{name}.idx", [index])
    except BaseException:
        if not already_there:
            pack.unlink(missing_ok=True)  # no pack without its index for git to trip on
        keep.unlink(missing_ok=True)
        raise
    return name


def pack_count(pack_dir: Path) -> int:
    """The packs in `pack_dir` (0 when there is no such folder): what git's gc.autoPackLimit
    counts, and what upkeep.py and the choice of loose objects (native.py) look at."""
    try:
        with os.scandir(pack_dir) as entries:
            return sum(1 for entry in entries if entry.name.endswith(".pack"))
    except OSError:
        return 0


def release(pack_dir: Path, name: str) -> None:
    """Let git's repacks take the pack `name` (write_pack) from now on: HEAD reaches it, or
    nothing ever will."""
    with contextlib.suppress(FileNotFoundError):
        (pack_dir / f"{name}.keep").unlink()


def clear_stale_keeps(pack_dir: Path) -> list[str]:
    """Remove the `.keep` files a feedbackd process on this machine left when it died between a
    pack and its commit (a `kill -9`): git would never repack those packs. The packs freed."""
    freed = []
    host = socket.gethostname()
    with contextlib.suppress(OSError):  # no pack folder, or not one: nothing of ours there
        for entry in os.scandir(pack_dir):
            if entry.name.endswith(".keep") and _keeper_gone(Path(entry.path), host):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    freed.append(entry.name.removesuffix(".keep"))
    return freed


def _keeper_gone(keep: Path, host: str) -> bool:
    """Whether `keep` is one of ours whose process no longer runs on this machine."""
    try:
        words = read_file_text(keep, "replace").split()
    except OSError:
        return False
    if len(words) != 4 or words[0] != KEEP_WORD or words[2:] != ["on", host]:
        return False
    return words[1].isdigit() and not pid_alive(int(words[1]))


def _index(objects: list[tuple[PackedObject, int]], checksum: bytes) -> bytes:
    """A version 2 pack index: ids sorted, by first byte (fan-out), CRCs, offsets."""
    counts = [0] * 256
    for obj, _ in objects:
        counts[obj.oid[0]] += 1
    fan_out, total = [], 0
    for count in counts:
        total += count
        fan_out.append(total)
    parts = [_INDEX_MAGIC, struct.pack(">I", 2), struct.pack(">256I", *fan_out)]
    parts += [obj.oid for obj, _ in objects]
    parts += [struct.pack(">I", obj.crc) for obj, _ in objects]
    parts += [struct.pack(">I", offset) for _, offset in objects]
    index = b"".join(parts) + checksum
    return index + hashlib.sha1(index).digest()


def _put(pack_dir: Path, prefix: str, name: str, parts: list[bytes]) -> None:
    """`parts`, one after the other, as `pack_dir/name`, read-only as git makes it: written
    under a temporary name (one git's own clean-up knows), then renamed."""
    temporary = pack_dir / f"{prefix}{os.urandom(6).hex()}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    try:
        with os.fdopen(descriptor, "wb", closefd=False) as out:
            out.writelines(parts)
    except BaseException:
        os.close(descriptor)
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    os.close(descriptor)
    os.rename(temporary, pack_dir / name)

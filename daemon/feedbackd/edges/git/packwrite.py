"""A commit's objects written as one pack file, and small packs merged into one.

A loose object is a file of its own, and on ext4 making a file is most of what storing a small
object costs (0.3–0.6 ms, more just after many files were deleted). A decision stores about a
dozen objects (four files, seven trees, the commit) where `git add` + `git commit` of one file
store four; as one pack and its index they are two files: 0.8 ms instead of 7 ms here.

The format is git's own (gitformat-pack(5)): a version 2 pack of whole objects (no deltas) and a
version 2 index, each written under a temporary name and renamed, the pack before its index (git
finds packs by their index). Git and libgit2 look for new packs when an object is not in those
they know, so a git process started before the pack finds its objects. So that decisions do not
leave a pack each for git to look through (git's own `gc --auto` repacks everything once there
are 50), every MERGE_AT packs of one size are merged into one (merge_small_packs). SHA-1
repositories only: the in-process path leaves others to git (native.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

_KIND_NUMBERS = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}
_DELTA_KINDS = (6, 7)  # ofs-delta, ref-delta: only whole objects are merged
_INDEX_MAGIC = b"\377tOc"
_ID_BYTES = 20
MERGE_AT = 16  # packs of one size class, before they are merged into one
# The size classes: a merge reads at most MERGE_AT packs of one class; bigger ones are left.
_CLASS_LIMITS = (64 << 10, 1 << 20)
# A pack with any of these beside it belongs to a git command's own bookkeeping: left alone.
_SIDE_FILES = (".keep", ".promisor", ".mtimes", ".bitmap", ".rev")


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


def write_pack(pack_dir: Path, objects: Iterable[PackedObject], *, durable: bool = False) -> str:
    """Write `objects` (each once) as a pack and its index in `pack_dir`; the pack's name.
    durable: synced to disk before it is named, as a merge needs before it deletes what it
    merged. The entries are written as they are, not joined into one more copy of them all."""
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
    _put(pack_dir, "tmp_pack_", f"{name}.pack", body, durable)
    _put(pack_dir, "tmp_idx_", f"{name}.idx", [index], durable)
    return name


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


def _put(pack_dir: Path, prefix: str, name: str, parts: list[bytes], durable: bool) -> None:
    """`parts`, one after the other, as `pack_dir/name`, read-only as git makes it: written
    under a temporary name (one git's own clean-up knows), then renamed."""
    temporary = pack_dir / f"{prefix}{os.urandom(6).hex()}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    try:
        with os.fdopen(descriptor, "wb", closefd=False) as out:
            out.writelines(parts)
        if durable:
            os.fsync(descriptor)
    except BaseException:
        os.close(descriptor)
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    os.close(descriptor)
    os.rename(temporary, pack_dir / name)


def merge_small_packs(pack_dir: Path) -> int:
    """Merge small packs of whole objects of one size class (under 64 KB, under 1 MB) into one
    once the class has MERGE_AT of them; how many were merged away. Each merge reads only packs
    of a size: a commit's packs are merged every MERGE_AT commits, their merged packs every
    MERGE_AT merges (16 MB at most, held in memory); bigger packs are left to git's own
    maintenance. A pack is deleted only once the merged pack holding its objects is on disk; a
    pack that cannot be read, or holds deltas, is left."""
    try:
        names = set(os.listdir(pack_dir))
    except FileNotFoundError:
        return 0
    if "multi-pack-index" in names:
        return 0  # git's own maintenance looks after this repository's packs
    for packs in _size_classes(pack_dir, names):
        if len(packs) >= MERGE_AT:
            return _merged(pack_dir, packs)
    return 0


def _merged(pack_dir: Path, packs: list[Path]) -> int:
    merged: dict[Path, list[PackedObject]] = {}
    for pack in packs:
        with contextlib.suppress(OSError, ValueError):
            found = read_whole_objects(pack)
            if found is not None:
                merged[pack] = found
    if len(merged) < 2:
        return 0
    write_pack(pack_dir, (obj for objects in merged.values() for obj in objects), durable=True)
    _synced(pack_dir)
    for pack in merged:  # the index first: git no longer looks for the pack
        with contextlib.suppress(FileNotFoundError):
            pack.with_suffix(".idx").unlink()
        with contextlib.suppress(FileNotFoundError):
            pack.unlink()
    return len(merged)


def _size_classes(pack_dir: Path, names: set[str]) -> list[list[Path]]:
    """The packs that may be merged, by size class: each class holds packs up to 16 times
    bigger than the one before."""
    classes: list[list[Path]] = [[] for _ in _CLASS_LIMITS]
    for name in sorted(names):
        stem = name.removesuffix(".pack")
        if stem == name or not stem.startswith("pack-") or f"{stem}.idx" not in names:
            continue
        if any(f"{stem}{side}" in names for side in _SIDE_FILES):
            continue
        with contextlib.suppress(FileNotFoundError):
            size = (pack_dir / name).stat().st_size
            for number, limit in enumerate(_CLASS_LIMITS):
                if size < limit:
                    classes[number].append(pack_dir / name)
                    break
    return classes


def read_whole_objects(pack: Path) -> list[PackedObject] | None:
    """The objects of a pack, as entries to copy into another; None when it holds a delta
    (which names other objects by offset or id) or an offset past 2 GB. ValueError when the
    pack or its index is not what its checksums say, or not a version 2 pack and index."""
    content, index = pack.read_bytes(), pack.with_suffix(".idx").read_bytes()
    checksum = content[-_ID_BYTES:]
    header = _INDEX_MAGIC + struct.pack(">I", 2)
    fan_out_end = len(header) + 256 * 4
    if (
        len(content) < 12 + _ID_BYTES
        or hashlib.sha1(content[:-_ID_BYTES]).digest() != checksum
        or len(index) < fan_out_end + 2 * _ID_BYTES
        or hashlib.sha1(index[:-_ID_BYTES]).digest() != index[-_ID_BYTES:]
        or not index.startswith(header)
    ):
        raise ValueError(f"{pack.name} is damaged, or not a version 2 pack")
    count = struct.unpack_from(">I", index, fan_out_end - 4)[0]
    crcs_at = fan_out_end + count * _ID_BYTES
    offsets_at = crcs_at + count * 4
    if len(index) != offsets_at + count * 4 + 2 * _ID_BYTES or index[-40:-20] != checksum:
        raise ValueError(f"{pack.name} is not the pack its index was made for")
    offsets = struct.unpack_from(f">{count}I", index, offsets_at)
    if any(offset & 0x80000000 for offset in offsets):
        return None
    return _entries(pack, content, index, offsets)


def _entries(
    pack: Path, content: bytes, index: bytes, offsets: tuple[int, ...]
) -> list[PackedObject] | None:
    """The pack's entries at `offsets` (in the index's order), each checked by its CRC."""
    count, fan_out_end = len(offsets), len(_INDEX_MAGIC) + 4 + 256 * 4
    starts = sorted(offsets)
    ends = dict(zip(starts, [*starts[1:], len(content) - _ID_BYTES], strict=True))
    objects = []
    for number, offset in enumerate(offsets):
        entry = content[offset : ends[offset]]
        crc = struct.unpack_from(">I", index, fan_out_end + count * _ID_BYTES + number * 4)[0]
        if offset < 12 or not entry or zlib.crc32(entry) != crc:
            raise ValueError(f"{pack.name}: an object is not where its index says")
        if (entry[0] >> 4) & 0x07 in _DELTA_KINDS:
            return None
        oid = index[fan_out_end + number * _ID_BYTES : fan_out_end + (number + 1) * _ID_BYTES]
        objects.append(PackedObject(oid, entry, crc))
    return objects


def _synced(folder: Path) -> None:
    """The folder's entries (the merged pack's names) on disk."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

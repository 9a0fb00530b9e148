"""The catalog of a sharded index: which version of each shard is current, and what went in.

Layout under the ``--out`` location::

    CURRENT                                  {"catalog": "catalogs/00000003.json"}: the pointer
    catalogs/00000003.json                   one catalog version (never rewritten)
    shards/shard-0007/versions/<id>.json     a committed shard version: its files, by content
    shards/shard-0007/objects/<sha256>       the files' content, shared by every version

A shard is an ordinary memlane home; a version lists its files (``lexical/…``,
``manifest.json``, ``vectors.usearch``, its embedding cache …) by content hash, so a new
version uploads only the files that changed (tantivy never rewrites a segment file). A
version's record is written after all its objects, and a catalog after all its shard
versions; the pointer is written last, in one PUT (S3) or one rename (a folder), so a reader
sees the old catalog or the new one, never a half-written one.

A shard version's id is a hash of what built it (the version it started from, the sources
it read with their ETags, the ones it dropped, the embedder), so a driver killed mid-run
and started again finds the versions it had committed and does not build them again.

Example:
    >>> import tempfile
    >>> from memlane.cluster.storage import location
    >>> out = location(tempfile.mkdtemp())
    >>> load(out) is None
    True
    >>> cat = Catalog(generation=1, shards=[ShardRef(0, None)], partition=Partition(1))
    >>> publish(out, cat)
    'catalogs/00000001.json'
    >>> load(out).generation
    1
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memlane.cluster.storage import Location
from memlane.errors import InvalidDataError

__all__ = ["Catalog", "Partition", "ShardRef", "Source", "load", "materialize", "publish", "shard_dir", "upload_home"]

POINTER = "CURRENT"
FORMAT = 1
# Never part of a shard version: the writer's lock and the home's own activity log.
_LOCAL_ONLY = {"write.lock", "events.jsonl"}


def shard_dir(shard: int) -> str:
    """The folder of a shard under the catalog's location."""
    return f"shards/shard-{shard:04d}"


@dataclass
class Partition:
    """How sources map to shards: a stable hash of their key, or of its first ``depth``
    folders below the source root (e.g. the project folder) so scoped queries touch few shards."""

    shards: int
    depth: int | None = None

    def shard_of(self, root: str, key: str) -> int:
        """The shard of object ``key`` (relative to source ``root``)."""
        part = "/".join(key.split("/")[: self.depth]) if self.depth else key
        digest = hashlib.blake2b(f"{root.rstrip('/')}/{part}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") % self.shards


@dataclass
class Source:
    """One source object as the catalog last indexed it."""

    etag: str
    size: int
    shard: int
    root: str
    duplicate_of: str | None = None
    """The URI of the identical object (same ETag and size) indexed in its place."""


@dataclass
class ShardRef:
    """One shard's current version and what it holds."""

    shard: int
    version: str | None
    """None while no source maps to the shard."""
    chunks: int = 0
    files: int = 0
    sessions: int = 0
    docs: int = 0
    """Documents BM25 counts (tantivy's, deleted ones until a merge)."""
    tokens: int = 0
    """Text tokens: with ``docs``, the corpus statistics the shard adds to global BM25."""
    bytes: int = 0
    ts_min: int | None = None
    ts_max: int | None = None
    sources: list[str] = field(default_factory=list)
    """The kinds of chunks it holds (``transcript``, ``knowledge``)."""
    partitions: list[str] = field(default_factory=list)
    """With a partition depth, the key prefixes (e.g. project folders) it holds."""


@dataclass
class Catalog:
    """One version of a sharded index."""

    generation: int
    shards: list[ShardRef]
    partition: Partition
    embedder_id: str | None = None
    dim: int | None = None
    stage_root: str = ""
    """Where workers put the objects they read; hits' paths under it are shown as their URIs."""
    roots: list[str] = field(default_factory=list)
    sources: dict[str, Source] = field(default_factory=dict)
    created: str = ""
    format: int = FORMAT

    def to_json(self) -> bytes:
        """The catalog as stored."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Catalog:
        """Read a stored catalog."""
        d = json.loads(data)
        if d.get("format") != FORMAT:
            raise InvalidDataError(f"catalog format {d.get('format')} is not {FORMAT}: this memlane cannot read it")
        return cls(
            generation=d["generation"],
            shards=[ShardRef(**s) for s in d["shards"]],
            partition=Partition(**d["partition"]),
            embedder_id=d["embedder_id"],
            dim=d["dim"],
            stage_root=d["stage_root"],
            roots=d["roots"],
            sources={k: Source(**v) for k, v in d["sources"].items()},
            created=d["created"],
        )

    def display_path(self, path: str) -> str:
        """A hit's path as its source URI (``s3://bucket/key``) when a worker staged it."""
        if self.stage_root and path.startswith(self.stage_root + "/s3/"):
            return "s3://" + path[len(self.stage_root) + 4 :]
        return path


def load(out: Location) -> Catalog | None:
    """The current catalog, or None when nothing was published yet."""
    pointer = out.read_bytes(POINTER)
    if pointer is None:
        return None
    try:
        target = json.loads(pointer)["catalog"]
    except (ValueError, KeyError, TypeError):
        raise InvalidDataError(f"{out.uri_of(POINTER)} is not a memlane catalog pointer") from None
    data = out.read_bytes(target)
    if data is None:
        raise InvalidDataError(f"{out.uri_of(POINTER)} points to {target}, which does not exist")
    return Catalog.from_json(data)


def publish(out: Location, catalog: Catalog) -> str:
    """Write ``catalog`` as a new version, then swap the pointer to it; returns its key."""
    catalog.created = catalog.created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    key = f"catalogs/{catalog.generation:08d}.json"
    out.write_bytes(key, catalog.to_json())
    out.write_bytes(POINTER, json.dumps({"catalog": key, "generation": catalog.generation}).encode())
    return key


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def version_record(out: Location, shard: int, version: str) -> dict[str, Any] | None:
    """The record of a committed shard version, or None when it was never committed."""
    data = out.read_bytes(f"{shard_dir(shard)}/versions/{version}.json")
    return None if data is None else json.loads(data)


def upload_home(home: Path, out: Location, shard: int, version: str, info: dict[str, Any]) -> dict[str, Any]:
    """Upload a shard's home as version ``version`` (only files whose content is new) and
    commit it; returns the version record (its files plus ``info``)."""
    base = shard_dir(shard)
    have = {o.key.rsplit("/", 1)[-1] for o in out.list(f"{base}/objects")}
    files: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        rel = path.relative_to(home).as_posix()
        if rel in _LOCAL_ONLY or path.name.startswith("."):
            continue
        digest = _sha256(path)
        if digest not in have:
            out.upload(path, f"{base}/objects/{digest}")
            have.add(digest)
        files[rel] = {"object": digest, "size": path.stat().st_size}
    record = {**info, "shard": shard, "version": version, "files": files}
    # Written last: a version without its record does not exist for any reader.
    out.write_bytes(f"{base}/versions/{version}.json", json.dumps(record, sort_keys=True).encode())
    return record


def materialize(out: Location, shard: int, record: dict[str, Any], dest: Path, objects: Path | None = None) -> Path:
    """Lay a shard version out as a home at ``dest`` (done once: a version never changes).

    With ``objects`` (a local folder of downloaded objects shared by every version) files
    are hard links into it; without, each is downloaded into place (a home to write to).
    """
    done = dest / ".complete"
    if done.exists():
        return dest
    # Processes of one machine (router replicas, shard actors, searches) may lay out the same
    # version or download the same object at once: one at a time.
    lock = (objects or dest.parent) / ".materialize.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not done.exists():
            _lay_out(out, shard, record, dest, objects)
    return dest


def _lay_out(out: Location, shard: int, record: dict[str, Any], dest: Path, objects: Path | None) -> None:
    tmp = dest.with_name(dest.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    base = shard_dir(shard)
    for rel, f in record["files"].items():
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if objects is None:
            out.download(f"{base}/objects/{f['object']}", target)
            continue
        cached = objects / f["object"]
        if not cached.exists():
            out.download(f"{base}/objects/{f['object']}", cached)
        try:
            os.link(cached, target)
        except OSError:  # another file system
            shutil.copyfile(cached, target)
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / ".complete").touch()
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)

"""Where sources come from and where an index goes: an S3 prefix or a local (shared) folder,
behind one small interface, so every other module of the cluster treats both alike.

S3 goes through boto3 (``pip install 'memlane[ray]'``), which honours ``AWS_ENDPOINT_URL``
(a moto server in the tests, MinIO, …) and the usual credential chain. Listing uses the
``list_objects_v2`` paginator; a single PUT is atomic in S3, which is what the catalog's
pointer swap relies on. A local folder writes a temporary file and renames it, which is
atomic on one file system.

Example:
    >>> import tempfile
    >>> loc = location(tempfile.mkdtemp())
    >>> loc.write_bytes("a/b.txt", b"hi")
    >>> [(o.key, o.size) for o in loc.list()]
    [('a/b.txt', 2)]
    >>> loc.read_bytes("a/b.txt"), loc.read_bytes("missing")
    (b'hi', None)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from memlane.errors import InvalidArgumentError

__all__ = ["LocalLocation", "Location", "Object", "S3Location", "location"]


@dataclass(frozen=True)
class Object:
    """One object (file) under a location."""

    key: str
    """Path relative to the location, ``/``-separated."""
    etag: str
    """Changes when the content changes: S3's ETag, a local file's size and mtime."""
    size: int


class Location:
    """An S3 prefix or a local folder holding objects under relative keys."""

    uri: str

    def list(self, under: str = "") -> Iterator[Object]:
        """Every object below ``under`` (relative), in key order."""
        raise NotImplementedError

    def read_bytes(self, key: str) -> bytes | None:
        """The object's bytes, or None when it does not exist."""
        raise NotImplementedError

    def write_bytes(self, key: str, data: bytes) -> None:
        """Write an object whole; a reader sees the old one or the new one, never a part."""
        raise NotImplementedError

    def open_read(self, key: str) -> IO[bytes]:
        """A binary stream of the object (read in pieces, never whole into memory)."""
        raise NotImplementedError

    def upload(self, path: Path, key: str) -> None:
        """Copy a local file to ``key``."""
        raise NotImplementedError

    def download(self, key: str, path: Path) -> None:
        """Copy ``key`` to a local file (written beside it, then renamed)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.part")
        with self.open_read(key) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(tmp, path)

    def child(self, key: str) -> Location:
        """The location of a sub-folder."""
        raise NotImplementedError

    def uri_of(self, key: str) -> str:
        """The full URI of an object."""
        return f"{self.uri.rstrip('/')}/{key}"


class LocalLocation(Location):
    """A folder on a local or shared file system."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().resolve()
        self.uri = str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / key

    def list(self, under: str = "") -> Iterator[Object]:
        base = self._path(under) if under else self.root
        if base.is_file():
            st = base.stat()
            yield Object(base.relative_to(self.root).as_posix(), f"{st.st_size:x}-{st.st_mtime_ns:x}", st.st_size)
            return
        found = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if name.startswith("."):  # temporary files of a write in progress
                    continue
                p = Path(dirpath) / name
                try:
                    st = p.stat()
                except OSError:  # gone since the walk saw it
                    continue
                found.append(
                    Object(p.relative_to(self.root).as_posix(), f"{st.st_size:x}-{st.st_mtime_ns:x}", st.st_size)
                )
        yield from sorted(found, key=lambda o: o.key)

    def read_bytes(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def write_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def open_read(self, key: str) -> IO[bytes]:
        return open(self._path(key), "rb")

    def upload(self, path: Path, key: str) -> None:
        dest = self._path(key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.part")
        shutil.copyfile(path, tmp)
        os.replace(tmp, dest)

    def child(self, key: str) -> Location:
        return LocalLocation(self._path(key))

    def uri_of(self, key: str) -> str:
        return str(self._path(key))


def _s3_client() -> Any:
    try:
        import boto3
    except ImportError:
        raise ImportError("S3 locations need boto3: pip install 'memlane[ray]'") from None
    # One client per process (clients are thread-safe; building one costs ~50 ms).
    global _CLIENT
    if _CLIENT is None:
        from botocore.config import Config

        _CLIENT = boto3.session.Session().client("s3", config=Config(retries={"max_attempts": 8, "mode": "adaptive"}))
    return _CLIENT


_CLIENT: Any = None


class S3Location(Location):
    """An ``s3://bucket/prefix``."""

    def __init__(self, uri: str) -> None:
        rest = uri.removeprefix("s3://")
        self.bucket, _, prefix = rest.partition("/")
        if not self.bucket:
            raise InvalidArgumentError(f"{uri!r} names no bucket: use s3://bucket/prefix/")
        self.prefix = prefix.strip("/")
        self.uri = f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def list(self, under: str = "") -> Iterator[Object]:
        base = self._key(under) if under else self.prefix
        # A prefix is a folder: "logs" must not list "logs-old/…".
        prefix = f"{base}/" if base else ""
        cut = len(self.prefix) + 1 if self.prefix else 0
        pages = _s3_client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        for page in pages:
            for item in page.get("Contents", ()):
                yield Object(item["Key"][cut:], item["ETag"].strip('"'), int(item["Size"]))

    def read_bytes(self, key: str) -> bytes | None:
        client = _s3_client()
        try:
            data: bytes = client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()
            return data
        except client.exceptions.NoSuchKey:
            return None

    def write_bytes(self, key: str, data: bytes) -> None:
        _s3_client().put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def open_read(self, key: str) -> IO[bytes]:
        body: IO[bytes] = _s3_client().get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
        return body

    def upload(self, path: Path, key: str) -> None:
        # upload_file switches to a multipart upload for large files.
        _s3_client().upload_file(str(path), self.bucket, self._key(key))

    def download(self, key: str, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.part")
        _s3_client().download_file(self.bucket, self._key(key), str(tmp))
        os.replace(tmp, path)

    def child(self, key: str) -> Location:
        return S3Location(f"s3://{self.bucket}/{self._key(key)}")


def location(uri: str | os.PathLike[str]) -> Location:
    """The location a URI names: ``s3://bucket/prefix`` or a local folder."""
    text = os.fspath(uri)
    if text.startswith("s3://"):
        return S3Location(text)
    if "://" in text:
        raise InvalidArgumentError(f"{text!r}: only s3:// URIs and local folders are supported")
    return LocalLocation(text)

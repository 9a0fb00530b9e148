"""memlane on a Ray cluster: distributed indexing into a sharded index, and searching it in
process (``pip install 'memlane[ray]'``).

Nothing here is imported by ``import memlane``; Ray and boto3 load only when a cluster
function runs.

- :func:`index_sources` (``memlane index SOURCES --ray … --out URI``): build or update a
  sharded index from S3 prefixes or folders (:mod:`memlane.cluster.index`).
- :func:`memlane.cluster.batch.embed_index_batch` (``memlane --index URI embed --batch …``):
  its bulk vector backfill through Bedrock batch inference (:mod:`memlane.cluster.batch`).
- :func:`open_index` (``memlane --index URI search …``): search it in this process, with the
  same hits and scores as one home built from the same files (:mod:`memlane.cluster.search`).
- :func:`memlane.cluster.serve.start` (``memlane serve --index URI --ray …``): serve it over
  HTTP on Ray Serve, the same answers (:mod:`memlane.cluster.serve`).
- :func:`connect` (``memlane --remote URL search …``): a served index from a client, with the
  reading part of the ``Memory`` interface; imports no Ray (:mod:`memlane.cluster.client`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ShardedIndex", "connect", "index_sources", "open_index"]


def __getattr__(name: str) -> Any:
    # Each entry point loads its own module (and its dependencies) on first use.
    if name in ("ShardedIndex", "open_index"):
        from memlane.cluster import search

        return getattr(search, name)
    if name == "connect":
        from memlane.cluster.client import connect

        return connect
    if name == "index_sources":
        from memlane.cluster.index import index_sources

        return index_sources
    raise AttributeError(f"module 'memlane.cluster' has no attribute {name!r}")

"""The base of memlane's run reports: a dataclass of counters that reads back as JSON.

Each run's report (:class:`memlane.memory.IndexReport`, :class:`memlane.maintenance.RepairReport`,
:class:`memlane.cluster.index.ClusterReport`, :class:`memlane.embed.batch_backfill.BatchBackfillReport`)
declares its own counters: their order is the order of the keys the command line prints with
``--json``, so the shared ones are not hoisted into a base (that would move them first).

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Counted(Report):
    ...     files: int = 0
    >>> Counted(3).to_dict()
    {'files': 3}
"""

from __future__ import annotations

from dataclasses import Field, asdict
from typing import Any, ClassVar

__all__ = ["Report"]


class Report:
    """A report dataclass's shared behaviour: its JSON-ready form."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # set by @dataclass on each report

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (nested reports and lists copied)."""
        return asdict(self)

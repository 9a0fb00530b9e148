"""Memory types and scopes of brain entries: what an entry is about, who may see it, where.

The four types are Claude Code's, with its default scopes:

- ``user`` — about the user (role, preferences, what they know): always ``private``, never
  bound to a project;
- ``feedback`` — how to work (corrections, rules the user gave): ``private`` unless it is a
  rule for the whole team (``team``); never bound to a project;
- ``project`` — the work itself (decisions, incidents, context, open threads): ``team``, and
  bound to its project when it names one;
- ``reference`` — where things live outside the repository (dashboards, tickets, runbooks):
  usually ``team``; bound to a project when it names one.

A ``private`` entry never leaves the machine (:mod:`memlane.brain.team` exports ``team``
entries only). Injection follows the type: user and feedback entries in every session, project
and reference entries bound to a project only in sessions of that project. Entries without a
``type`` (written before types existed) take their section's: :data:`SECTION_TYPES`.

A project is named by its key (a repository root, as hits show it) or its name, the key's last
part; entries store the name, which is the same on every machine of a team.

Example:
    >>> from memlane.brain.document import Entry
    >>> e = Entry("KD01", "2026-04-01", "Billing uses Postgres.", meta={"project": "billing"})
    >>> entry_type(e), entry_scope(e), in_project(e, ["/src/billing"]), in_project(e, ["/src/web"])
    ('project', 'team', True, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Protocol

from memlane.errors import InvalidArgumentError


class Entry(Protocol):
    """What the rules read of a brain entry (:class:`memlane.brain.document.Entry`): named
    structurally, since the document renders entries with these rules."""

    @property
    def prefix(self) -> str: ...

    @property
    def meta(self) -> Mapping[str, str]: ...


TYPES = ("user", "feedback", "project", "reference")
"""Memory types, as Claude Code sorts its own memory."""

SCOPES = ("private", "team")
"""Who may see an entry: this machine only, or the team (exported)."""

DEFAULT_SCOPES = {"user": "private", "feedback": "private", "project": "team", "reference": "team"}
"""Claude Code's default scope per type."""

SECTION_TYPES = {"COE": "project", "KD": "project", "LL": "project", "RC": "project", "OT": "project",
                 "CR": "feedback", "CP": "feedback", "FA": "project"}  # fmt: skip
"""The type of an entry that does not say: incidents, decisions, lessons, context, threads and
failed attempts are about the work; corrections and competences about how to work."""

BOUND_TYPES = ("project", "reference")
"""Types an entry of which may be bound to a project."""


def entry_type(entry: Entry) -> str:
    """The entry's type: its ``type`` metadata, else its section's (:data:`SECTION_TYPES`)."""
    declared = entry.meta.get("type", "")
    return declared if declared in TYPES else SECTION_TYPES.get(entry.prefix, "project")


def entry_scope(entry: Entry) -> str:
    """The entry's scope: its ``scope`` metadata, else its type's default; a user entry is private."""
    kind = entry_type(entry)
    declared = entry.meta.get("scope", "")
    if kind == "user" or declared not in SCOPES:
        return DEFAULT_SCOPES[kind]
    return declared


def entry_project(entry: Entry) -> str | None:
    """The project a project or reference entry is bound to, if any."""
    return (entry.meta.get("project") or None) if entry_type(entry) in BOUND_TYPES else None


def project_name(project: str) -> str:
    """The name of a project key (its last part); a name stays itself.

    Example:
        >>> project_name("/home/me/src/billing"), project_name("billing")
        ('billing', 'billing')
    """
    return PurePath(project).name or project


def in_project(entry: Entry, keys: Sequence[str]) -> bool:
    """Whether ``entry`` belongs in a session of the project ``keys`` name (the project's key or
    keys): user, feedback and unbound entries everywhere, a bound entry only in its project."""
    bound = entry_project(entry)
    return bound is None or any(bound in (key, project_name(key)) for key in keys)


def classify(
    prefix: str, type: str | None = None, scope: str | None = None, project: str | None = None
) -> dict[str, str]:
    """The metadata of a new entry of section ``prefix``: what was asked, checked against the rules.

    Raises:
        memlane.errors.InvalidArgumentError: An unknown type or scope, a team-scoped user entry, a user or feedback
            entry bound to a project.

    Example:
        >>> classify("KD", project="/src/billing")
        {'project': 'billing'}
        >>> classify("LL", type="user", scope="team")
        Traceback (most recent call last):
        ...
        memlane.errors.InvalidArgumentError: a user entry is always private (it is about you): leave --scope out
    """
    if type is not None and type not in TYPES:
        raise InvalidArgumentError(f"unknown memory type {type!r}: use one of {', '.join(TYPES)}")
    if scope is not None and scope not in SCOPES:
        raise InvalidArgumentError(f"unknown scope {scope!r}: use private or team")
    kind = type or SECTION_TYPES.get(prefix.upper(), "project")
    if kind == "user" and scope == "team":
        raise InvalidArgumentError("a user entry is always private (it is about you): leave --scope out")
    if project and kind not in BOUND_TYPES:
        raise InvalidArgumentError(
            f"a {kind} entry applies in every project: only project and reference entries take --project"
        )
    meta = {"type": type, "scope": scope, "project": project_name(project) if project else None}
    return {k: v for k, v in meta.items() if v}

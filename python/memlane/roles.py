"""Agent roles: what an agent reads and writes, after the Brain design's scopes.

``--agent ROLE`` on ``memlane mcp`` and ``memlane hook``, or ``$MEMLANE_AGENT``:

- ``admin`` (the default) reads every project's memories and every brain entry, and writes
  any entry; its hooks scope recall to the session's project, and reach into other projects,
  labelled, only when nothing in it is relevant;
- ``project:NAME`` reads project NAME's transcripts and notes, the notes of the user's global
  libraries (folders in no repository: a personal notes folder, the DailyActivity journal;
  :meth:`memlane.Memory.libraries`), and the brain entries that are its own or the admin's
  (bound to no project); it writes only project and reference entries, bound to NAME, and
  supersedes only those;
- ``skill:NAME`` receives context and writes nothing: it reads what a project agent of the
  project it runs in would (its working directory's), global libraries included, as a
  subagent gets the user's own memory in Claude Code (the user's notes hold how they work,
  which a skill needs as much as the project's; another project's memories it never reads),
  and gets no write tool.

NAME is a project's name (``billing``) or path. Example:
    >>> role = Role.parse("project:billing")
    >>> role.kind, role.project, role.can_write
    ('project', 'billing', True)
    >>> Role.parse("skill:review").can_write
    False
    >>> Role.parse("owner")
    Traceback (most recent call last):
    ...
    memlane.errors.InvalidArgumentError: unknown agent role 'owner': use admin, project:NAME or skill:NAME
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from memlane._check import echo
from memlane.errors import InvalidArgumentError

ROLE_ENV = "MEMLANE_AGENT"
"""The role of an agent whose command line does not name one."""


@dataclass(frozen=True)
class Role:
    """An agent's role: ``kind`` is ``admin``, ``project`` or ``skill``; ``name`` what follows the colon."""

    kind: str = "admin"
    name: str = ""

    @classmethod
    def parse(cls, text: str | None) -> Role:
        """``admin``, ``project:NAME`` or ``skill:NAME`` (``None``: ``$MEMLANE_AGENT``, else admin)."""
        text = (text if text is not None else os.environ.get(ROLE_ENV, "")).strip() or "admin"
        kind, _, name = text.partition(":")
        if kind == "admin" and not name:
            return cls()
        if kind in ("project", "skill") and name.strip():
            return cls(kind, name.strip())
        raise InvalidArgumentError(
            f"unknown agent role {echo(text, quote=True)}: use admin, project:NAME or skill:NAME"
        )

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}" if self.name else self.kind

    @property
    def can_write(self) -> bool:
        """Whether the agent may write to the brain (a skill agent only receives context)."""
        return self.kind != "skill"

    @property
    def project(self) -> str | None:
        """The project a project agent is bound to."""
        return self.name if self.kind == "project" else None

    def reads(self, cwd: str | None) -> str | None:
        """The project the agent reads (``None``: every one), for a session in ``cwd``."""
        if self.kind == "project":
            return self.name
        if self.kind == "skill" and cwd:
            from memlane import _core

            return _core.project_of(cwd)
        return None

    def narrow(self, asked: str | None, keys: Callable[[str], list[str]], cwd: str | None = None) -> str | None:
        """The project a read that asked for ``asked`` covers under this role: what was asked
        when it lies within the role's project (``keys`` resolves a project to its keys, as
        :meth:`memlane.Memory.project_keys`), the role's project when nothing was asked; never
        more than the role reads.

        Raises:
            PermissionError: ``asked`` names a project outside the role's.

        Example:
            >>> keys = {"billing": ["/src/billing"], "/src/billing": ["/src/billing"], "search": ["/src/search"]}.get
            >>> role = Role.parse("project:billing")
            >>> role.narrow(None, keys), role.narrow("/src/billing", keys), Role().narrow(None, keys)
            ('billing', '/src/billing', None)
            >>> role.narrow("search", keys)
            Traceback (most recent call last):
            PermissionError: agent project:billing reads project billing only, not search
        """
        reads = self.reads(cwd)
        if reads is None:
            return asked
        if asked is not None and set(keys(asked)) - set(keys(reads)):
            raise PermissionError(f"agent {self} reads project {reads} only, not {echo(asked)}")
        return reads if asked is None else asked

    def writes(self, section: str, type: str | None, project: str | None) -> tuple[str | None, str | None]:
        """The ``(type, project)`` a write of section ``section`` gets under this role.

        Raises:
            PermissionError: A skill agent, or a project agent writing outside its project.
        """
        if self.kind == "skill":
            raise PermissionError(f"agent {self} receives context and writes nothing")
        if self.kind == "admin":
            return type, project
        # Only writers need the brain's rules: a hook that queues a transcript never loads them.
        from memlane.brain.scopes import BOUND_TYPES, SECTION_TYPES, project_name

        kind = type or SECTION_TYPES.get(section.upper(), "project")
        if kind not in BOUND_TYPES:
            raise PermissionError(
                f"agent {self} writes its project's memories (type project or reference), not {kind} entries: those are the admin's"
            )
        if project and project_name(project) != project_name(self.name):
            raise PermissionError(f"agent {self} writes to project {echo(self.name)} only, not {echo(project)}")
        return type, self.name

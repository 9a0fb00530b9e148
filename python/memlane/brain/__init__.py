"""The curated brain: MEMORY.md (L1) and EVOLUTION.md (L2), the MemoryGuard and distillation.

- :class:`Brain` reads and edits MEMORY.md and EVOLUTION.md losslessly: stable keys,
  temporal validity (``valid_from``, ``superseded_by``), caps with archiving, a compact index,
  1-hop references, a file lock and atomic writes.
- :class:`MemoryGuard` is the one check on everything memlane writes into memory; a blocked
  write raises :class:`MemoryGuardError`; what the repository already holds draws a warning.
- Entries carry a type and a scope (:mod:`memlane.brain.scopes`: user, feedback, project,
  reference; private or team); team entries travel through a shared folder
  (:mod:`memlane.brain.team`); a section past its character cap refuses a write (:class:`CapError`).
- :func:`distill` turns a finished session (or the turns of it no note covers yet) into a
  DailyActivity note and new MEMORY.md entries (offline extractive engine, or an LLM through
  Amazon Bedrock), capturing corrections and preferences on the way (:mod:`memlane.brain.capture`).
- The agents' own plans become task memory (:mod:`memlane.brain.tasks`); decisions, entities,
  claims, tasks and notes read as typed, cited items (:mod:`memlane.brain.items`); what a
  forgotten session alone left in the brain is found and removed by :mod:`memlane.brain.cascade`.
- Every read, write, search, supersession and blocked write is one line in
  ``<home>/events.jsonl`` (:func:`memlane.brain.events.summarize`).

Example:
    >>> import tempfile
    >>> from memlane.brain import Brain
    >>> brain = Brain(tempfile.mkdtemp(), home=tempfile.mkdtemp())
    >>> brain.add("lessons", "Run `cargo test --release`; debug builds time out in CI.", on="2026-04-01").key
    'LL01'
"""

from memlane.brain.brain import Brain, CapError, Problem, Transaction, default_brain_dir
from memlane.brain.distill import DistillResult, distill
from memlane.brain.document import EVOLUTION_SCHEMA, MEMORY_SCHEMA, Document, Entry, Schema, SectionSpec, parse
from memlane.brain.engines import BedrockEngine, Distillation, DistillError, Engine, ExtractiveEngine, Item, Session
from memlane.brain.guard import Finding, MemoryGuard, MemoryGuardError
from memlane.events import EventLog, summarize

__all__ = [
    "EVOLUTION_SCHEMA",
    "MEMORY_SCHEMA",
    "BedrockEngine",
    "Brain",
    "CapError",
    "DistillError",
    "DistillResult",
    "Distillation",
    "Document",
    "Engine",
    "Entry",
    "EventLog",
    "ExtractiveEngine",
    "Finding",
    "Item",
    "MemoryGuard",
    "MemoryGuardError",
    "Problem",
    "Schema",
    "SectionSpec",
    "Session",
    "Transaction",
    "default_brain_dir",
    "distill",
    "parse",
    "summarize",
]

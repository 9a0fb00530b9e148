"""memlane's exceptions: one base class, one subclass per failure a caller can act on.

The classes raised by the Rust core are defined in the native module (so its errors map to
them one to one) and re-exported here, their public import site. File-not-found errors are
Python's own :class:`FileNotFoundError`. A bad argument raises :class:`InvalidArgumentError`
(a :class:`ValueError`) or :class:`ArgumentTypeError` (a :class:`TypeError`) at the call,
naming the argument, so ``except ValueError`` / ``except TypeError`` keep working.

The whole family, all :class:`MemlaneError` s (and where each lives):

- here, from the Rust core: :class:`IndexLockedError` (another process writes to the home),
  :class:`CorruptIndexError` (index state unreadable), :class:`EmbedderMismatchError` (vectors
  from another embedder), :class:`DiskFullError` (commit ran out of disk), :class:`ParseError`
  (a source file that cannot be parsed at all);
- here: :class:`InvalidArgumentError` / :class:`ArgumentTypeError` (a caller's bad value / type),
  :class:`InvalidDataError` (a malformed file or answer memlane was given to read, a
  ``ValueError``), :class:`WeightsMismatchError` (a model file's sha256 differs from the pinned
  one), :class:`LLMError` (a language-model call or its answer failed; also known as
  ``memlane.brain.DistillError`` and ``memlane.timeline.engines.EngineError``);
- :class:`memlane.embed.bedrock.BedrockError` (a Bedrock embedding call failed),
  :class:`memlane.embed.bedrock_batch.BatchJobError` (a Bedrock batch job failed);
- :class:`memlane._fs.BrainLockedError` (another process writes to the brain),
  :class:`memlane.brain.guard.MemoryGuardError` (MEMORY.md fails its guard),
  :class:`memlane.brain.brain.CapError` (a section over its cap, a ``ValueError``),
  :class:`memlane.brain.team.NotATeamFileError` (not a team memory file, a ``ValueError``);
- :class:`memlane.timeline.lease.LeaseError` and its :class:`~memlane.timeline.lease.LeaseHeldError`,
  :class:`~memlane.timeline.lease.CooldownError`, :class:`~memlane.timeline.lease.LeaseLostError`,
  :class:`~memlane.timeline.lease.BudgetExceededError` (a scheduled job may not or did not run);
- :class:`memlane.agents.hooks.HookInputError` (a hook's stdin is unusable, a ``ValueError``),
  :class:`memlane.agents.hooks.HookUsageError` (a hook called wrongly, an InvalidArgumentError);
- :class:`memlane.cluster.client.RemoteError` (a served index answered with an error),
  :class:`memlane.cluster.access.Forbidden` (a caller without the role, a ``PermissionError``).

:class:`IndexInterrupted` alone is not a MemlaneError: it is Ctrl-C's report, a
:class:`KeyboardInterrupt`, so ``except Exception`` never swallows it.

Example:
    >>> from memlane.errors import MemlaneError, IndexLockedError, InvalidArgumentError
    >>> issubclass(IndexLockedError, MemlaneError)
    True
    >>> issubclass(InvalidArgumentError, MemlaneError) and issubclass(InvalidArgumentError, ValueError)
    True
"""

from memlane._core import (
    CorruptIndexError,
    DiskFullError,
    EmbedderMismatchError,
    IndexLockedError,
    MemlaneError,
    ParseError,
)

__all__ = [
    "ArgumentTypeError",
    "CorruptIndexError",
    "DiskFullError",
    "EmbedderMismatchError",
    "IndexInterrupted",
    "IndexLockedError",
    "InvalidArgumentError",
    "InvalidDataError",
    "LLMError",
    "MemlaneError",
    "ParseError",
    "WeightsMismatchError",
]


class InvalidArgumentError(MemlaneError, ValueError):
    """An argument of the right type with a value memlane cannot use (the message names it)."""


class ArgumentTypeError(MemlaneError, TypeError):
    """An argument of the wrong type (the message names it and the type it got)."""


class InvalidDataError(MemlaneError, ValueError):
    """Data memlane was given to read (a file, a dataset, a server's answer) is malformed (the message says where)."""


class LLMError(MemlaneError):
    """A language model failed: the Bedrock call, the agent CLI subprocess, or an answer that is not the JSON asked for."""


class WeightsMismatchError(MemlaneError, ValueError):
    """A model file's bytes differ from the sha256 memlane pins for it (a changed or damaged package)."""


class IndexInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :meth:`memlane.Memory.index` after it committed what it had done.

    Still a :class:`KeyboardInterrupt` (``except Exception`` never swallows it). ``report``
    is the :class:`memlane.memory.IndexReport` of what was committed; ``files_to_index`` the
    files the run set out to read; ``chunks_pending`` the chunks left without vectors for
    ``memlane embed`` (or the same index run) to fill in.
    """

    def __init__(self, report: object, files_to_index: int, chunks_pending: int) -> None:
        super().__init__("index interrupted")
        self.report = report
        self.files_to_index = files_to_index
        self.chunks_pending = chunks_pending

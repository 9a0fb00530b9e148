"""The interface every language model answers to, and what its calls cost."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol


@dataclass
class Usage:
    """What a model spent: calls, tokens and the cost estimate at list prices.

    Example:
        >>> u = Usage(1, 1000, 200, 0.0016)
        >>> u.add(Usage(1, 500, 100, 0.0008))
        >>> (u.calls, u.tokens, u.cost_usd)
        (2, 1800, 0.0024)
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> None:
        """Add another usage to this one."""
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd = round(self.cost_usd + other.cost_usd, 6)

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` costs at most, counting 4 bytes a token (a budget check, not a tokenizer).

    Example:
        >>> estimate_tokens("twelve bytes")
        3
    """
    return (len(text.encode("utf-8")) + 3) // 4


class LanguageModel(Protocol):
    """Answers a prompt; counts what its calls cost in :attr:`usage`."""

    name: str
    usage: Usage
    max_tokens: int
    """The answer budget of one call (what a budget check adds to the prompt's tokens)."""

    def complete(self, system: str, prompt: str) -> str:
        """The model's answer to ``prompt`` under the ``system`` instructions.

        Raises:
            memlane.errors.LLMError: The call failed.
        """
        ...

"""Amazon Bedrock's Converse API as a :class:`~memlane.llm.model.LanguageModel`."""

from __future__ import annotations

import os
from typing import Any

from memlane.errors import LLMError
from memlane.llm.model import Usage

DEFAULT_BEDROCK_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
"""Bedrock model used when neither ``model_id`` nor ``$MEMLANE_BEDROCK_MODEL`` is set."""

# List prices in USD per 1,000 tokens (input, output); they may change. Unknown models: 0.
_PRICES = {
    "anthropic.claude-3-5-haiku-20241022-v1:0": (0.0008, 0.004),
    "anthropic.claude-3-haiku-20240307-v1:0": (0.00025, 0.00125),
    "amazon.nova-lite-v1:0": (0.00006, 0.00024),
    "amazon.nova-micro-v1:0": (0.000035, 0.00014),
}


class BedrockModel:
    """A Bedrock model answering through the Converse API, deterministically (temperature 0).

    Args:
        model_id: Model or inference-profile id (default ``$MEMLANE_BEDROCK_MODEL`` or
            :data:`DEFAULT_BEDROCK_MODEL`).
        region: AWS region (default: the AWS configuration's).
        client: A ``bedrock-runtime`` client to use instead of creating one (tests pass one
            stubbed with botocore's Stubber).
        max_tokens: Answer budget per call.

    Example:
        >>> m = BedrockModel("amazon.nova-lite-v1:0", max_tokens=500)
        >>> m.request("Answer in JSON.", "Hello")["inferenceConfig"]
        {'maxTokens': 500, 'temperature': 0.0}
    """

    name = "bedrock"

    def __init__(
        self, model_id: str | None = None, *, region: str | None = None, client: Any = None, max_tokens: int = 2_000
    ) -> None:
        self.model_id = model_id or os.environ.get("MEMLANE_BEDROCK_MODEL") or DEFAULT_BEDROCK_MODEL
        self.region = region
        self._client = client
        self.max_tokens = max_tokens
        self.usage = Usage()

    @property
    def client(self) -> Any:
        """The ``bedrock-runtime`` client, created on first use (boto3 is imported lazily)."""
        if self._client is None:
            try:
                import boto3
            except ImportError:
                raise LLMError(
                    "the bedrock engine needs boto3: pip install boto3 (or use --engine extractive)"
                ) from None
            self._client = boto3.client("bedrock-runtime", region_name=self.region)
        return self._client

    def request(self, system: str, prompt: str) -> dict[str, Any]:
        """The Converse request for ``prompt`` (exposed for tests and debugging)."""
        return {
            "modelId": self.model_id,
            "system": [{"text": system}],
            "messages": [{"role": "user", "content": [{"text": prompt}]}],
            "inferenceConfig": {"maxTokens": self.max_tokens, "temperature": 0.0},
        }

    def complete(self, system: str, prompt: str) -> str:
        """The answer's text; the call's tokens and cost are added to :attr:`usage`.

        Raises:
            LLMError: boto3 is missing or the call failed.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self.client.converse(**self.request(system, prompt))
        except (ClientError, BotoCoreError) as exc:
            raise LLMError(f"Bedrock converse with {self.model_id} failed: {exc}") from None
        tokens = response.get("usage") or {}
        used = Usage(1, int(tokens.get("inputTokens") or 0), int(tokens.get("outputTokens") or 0))
        price_in, price_out = _PRICES.get(self.model_id, (0.0, 0.0))
        used.cost_usd = round(used.input_tokens / 1000 * price_in + used.output_tokens / 1000 * price_out, 6)
        self.usage.add(used)
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        return "".join(b.get("text", "") for b in blocks)

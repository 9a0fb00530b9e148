"""Asking a language model: one interface over Amazon Bedrock and the coding-agent CLIs.

The distiller (:mod:`memlane.brain.engines`) and the summary engines
(:mod:`memlane.timeline.engines`) both send a system prompt and a user prompt to a model and
parse a JSON answer. This package holds that shared part, and nothing about what is asked:

- :class:`LanguageModel`: the interface (``complete(system, prompt) -> str``), with its
  :class:`Usage` (calls, tokens, cost) counted as it goes.
- :class:`BedrockModel`: the Amazon Bedrock Converse API (boto3, imported lazily).
- :class:`AgentCli`: the user's ``claude`` or ``codex`` CLI as a subprocess, for users without AWS.
- :func:`json_object`: the JSON object in a model's answer (fenced or not).

Every failure (the call, the subprocess, an answer that is not the JSON asked for) raises
:class:`memlane.errors.LLMError`.

Example:
    >>> json_object('Here it is:\\n```json\\n{"topic": "exporter"}\\n```')
    {'topic': 'exporter'}
"""

from memlane.llm.agent_cli import AgentCli
from memlane.llm.answer import json_object
from memlane.llm.bedrock import DEFAULT_BEDROCK_MODEL, BedrockModel
from memlane.llm.model import LanguageModel, Usage, estimate_tokens

__all__ = [
    "DEFAULT_BEDROCK_MODEL",
    "AgentCli",
    "BedrockModel",
    "LanguageModel",
    "Usage",
    "estimate_tokens",
    "json_object",
]

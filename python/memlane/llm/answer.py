"""Reading a model's answer: the one JSON object it was asked for."""

from __future__ import annotations

import json
import re
from typing import Any

from memlane.errors import LLMError

_FENCED = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.DOTALL)


def json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer: inside a code fence if there is one, else from
    its first ``{`` to its last ``}`` (models often wrap the object in a sentence).

    Example:
        >>> json_object('Sure. {"done": ["pinned numpy"]} Anything else?')
        {'done': ['pinned numpy']}

    Raises:
        LLMError: The answer holds no JSON object, or not a valid one.
    """
    text = text.strip()
    fenced = _FENCED.search(text)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise LLMError("the model's answer holds no JSON object")
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        raise LLMError(f"the model's answer is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise LLMError("the model's answer is not a JSON object")
    return data

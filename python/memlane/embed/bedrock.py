"""Amazon Bedrock Titan Text Embeddings V2 through one pooled, thread-safe ``bedrock-runtime`` client.

One request per text (Titan takes a single ``inputText`` per call), a bounded pool of
requests in flight that keeps output order, one retry layer (ours: botocore's own retries
are switched off on the client), inputs capped to the model's limits before sending, and
billed tokens summed for a cost estimate.

boto3 is imported only when a client is built, so ``import memlane`` stays fast.

Example (building the embedder needs no credentials):
    >>> emb = BedrockEmbedder(dimensions=512, concurrency=16, region="us-east-1")
    >>> emb.id
    'bedrock/amazon.titan-embed-text-v2:0/512'

    With AWS credentials, a call returns one unit row per text and adds up what it costs::

        [v.shape for v in emb.embed_documents(["deploy failed with exit code 137", "OOM killer"])]
        # [(1, 512), (1, 512)]
        emb.usage.estimated_cost_usd
        # 2.8e-07
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memlane.errors import ArgumentTypeError, InvalidArgumentError, MemlaneError

__all__ = [
    "BATCH_PRICE_PER_1K_TOKENS_USD",
    "DIMENSIONS",
    "MAX_INPUT_CHARS",
    "MAX_INPUT_TOKENS",
    "MODEL_ID",
    "PRICE_PER_1K_TOKENS_USD",
    "BedrockEmbedder",
    "BedrockError",
    "BedrockUsage",
    "RetryPolicy",
    "blank_vector",
    "cap_text",
    "estimate_tokens",
    "make_session",
    "model_input",
    "unit_rows",
]

MODEL_ID = "amazon.titan-embed-text-v2:0"
DIMENSIONS = (1024, 512, 256)
# Model limits from the Bedrock user guide, "Amazon Titan Text Embeddings models":
# "can intake up to 8,192 tokens or 50,000 characters".
MAX_INPUT_TOKENS = 8192
MAX_INPUT_CHARS = 50_000
# Amazon Bedrock pricing page (aws.amazon.com/bedrock/pricing, Amazon > Titan Text Embeddings V2,
# us-east-1): $0.00002 per 1,000 input tokens on demand, $0.00001 in batch. Prices change and
# differ by region: these only feed an *estimate*, never a bill.
PRICE_PER_1K_TOKENS_USD = 0.00002
BATCH_PRICE_PER_1K_TOKENS_USD = 0.00001
DEFAULT_CONCURRENCY = 8

# Error codes worth another attempt: throttling, a model still loading, a model-side timeout and
# server faults (any 5xx is retried too, whatever its code).
_RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "TooManyRequestsException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        "InternalServerException",
        "ServiceUnavailableException",
    }
)
_THROTTLING_CODES = frozenset({"ThrottlingException", "TooManyRequestsException"})
_BAD_CREDENTIAL_CODES = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
    }
)
_NO_CREDENTIALS_HINT = (
    "set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or run `aws configure` / `aws sso login`"
)

# Token estimate pieces (see estimate_tokens).
_LETTER_RUN = re.compile(r"[A-Za-z]+")
_NON_LETTER = re.compile(r"[^A-Za-z\s]")
_WIDE = re.compile(r"[^\x00-\u2fff]")
_ASTRAL = re.compile(r"[\U00010000-\U0010ffff]")
_SPACE = re.compile(r"\s")
_MERGED_SPACE = re.compile(r"(?<=\S) ")
# No character costs more than this many estimated tokens (an astral character: 1 + 1 + 2).
_MAX_TOKENS_PER_CHAR = 4


def estimate_tokens(text: str) -> int:
    """A deliberately pessimistic count of the tokens Titan will see in ``text``.

    Titan's tokenizer is not published, so this overcounts on purpose: a run of ASCII
    letters counts one token per 4 letters (English averages 4.7 characters per token),
    every digit, punctuation mark and other non-ASCII-letter character counts one (two from
    U+3000 up, where CJK lives; four for characters beyond the BMP, as byte-level fallbacks
    would), and every whitespace character counts one except a single space after a
    non-space, which tokenizers fold into the next word.

    Args:
        text: The text.

    Returns:
        The estimate, meant to exceed the real count for the prose, code and logs found in
        transcripts (not guaranteed: the tokenizer is unknown); at most ``4 * len(text)``.

    Example:
        >>> estimate_tokens("The deploy failed with exit code 137.")
        12
        >>> estimate_tokens("")
        0
    """
    letters = sum((len(run) + 3) // 4 for run in _LETTER_RUN.findall(text))
    others = len(_NON_LETTER.findall(text)) + len(_WIDE.findall(text)) + 2 * len(_ASTRAL.findall(text))
    spaces = len(_SPACE.findall(text)) - len(_MERGED_SPACE.findall(text))
    return letters + others + spaces


def _cap_chars(text: str, max_chars: int) -> str:
    text = text[:max_chars]
    if 2 * len(text) <= max_chars:
        return text
    # The service may count UTF-16 code units (a character beyond the BMP is two); counting
    # them so is safe either way.
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * max_chars:
        return text
    cut = units[: 2 * max_chars].decode("utf-16-le", "surrogatepass")
    # A cut between the two halves of a pair leaves a lone high surrogate: drop it.
    return cut[:-1] if "\ud800" <= cut[-1] <= "\udbff" else cut


def cap_text(text: str, max_tokens: int = MAX_INPUT_TOKENS, max_chars: int = MAX_INPUT_CHARS) -> str:
    """Cut ``text`` to the longest prefix within the model's character and (estimated) token limits.

    Args:
        text: The text.
        max_tokens: Token limit, checked with :func:`estimate_tokens`.
        max_chars: Character limit.

    Returns:
        ``text`` itself when it fits, else its longest prefix that does.

    Example:
        >>> len(cap_text("x" * 60_000))
        32768
        >>> cap_text("short stays as is")
        'short stays as is'
    """
    text = _cap_chars(text, max_chars)
    if _MAX_TOKENS_PER_CHAR * len(text) <= max_tokens or estimate_tokens(text) <= max_tokens:
        return text
    # The estimate of a prefix never decreases as the prefix grows, so bisect on its length.
    lo, hi = max_tokens // _MAX_TOKENS_PER_CHAR, len(text)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if estimate_tokens(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid
    return text[:lo]


def model_input(text: str, dimensions: int, normalize: bool) -> dict[str, Any]:
    """The Titan V2 request body for one text (``InvokeModel`` body, batch ``modelInput``).

    Args:
        text: The text, already capped.
        dimensions: 1024, 512 or 256.
        normalize: Ask the service for a unit vector.

    Returns:
        The JSON-ready body.

    Example:
        >>> model_input("hi", 256, True)
        {'inputText': 'hi', 'dimensions': 256, 'normalize': True}
    """
    return {"inputText": text, "dimensions": dimensions, "normalize": normalize}


def blank_vector(dim: int) -> np.ndarray:
    """The fixed unit vector given to an empty or blank text, which Titan refuses to embed.

    Example:
        >>> blank_vector(4)
        array([1., 0., 0., 0.], dtype=float32)
    """
    v = np.zeros(dim, dtype=np.float32)
    v[0] = 1.0
    return v


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` (2-D) as float32 C-contiguous rows of unit L2 norm.

    Raises:
        BedrockError: ``invalid-response`` on a zero or non-finite row.

    Example:
        >>> unit_rows(np.array([[3.0, 4.0]]))
        array([[0.6, 0.8]], dtype=float32)
    """
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise BedrockError("invalid-response", "Bedrock returned a zero or non-finite embedding")
    return np.ascontiguousarray(vectors / norms, dtype=np.float32)


class BedrockError(MemlaneError):
    """A Bedrock call failed in a way retrying will not fix; the message names the cause and the fix.

    Attributes:
        reason: A stable tag for programs: ``no-region``, ``no-credentials``,
            ``bad-credentials``, ``no-model-access``, ``wrong-region``, ``invalid-request``,
            ``quota``, ``model-error``, ``throttled``, ``unavailable``, ``connection``,
            ``invalid-response`` or ``request-failed``.

    Example:
        >>> err = BedrockError("no-region", "no AWS region configured")
        >>> err.reason, str(err)
        ('no-region', 'no AWS region configured')
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class RetryPolicy:
    """The one retry layer of the Bedrock path: capped exponential backoff with full jitter.

    Attempt ``n`` (1-based) that failed with a transient error is followed by a sleep drawn
    uniformly from ``[0, min(max_delay, base_delay * 2 ** (n - 1))]``.

    Attributes:
        max_attempts: Total attempts per request, the first included.
        base_delay: Seconds; the cap of the first backoff.
        max_delay: Seconds; no backoff is longer.
        sleep: How to wait; ``None`` (default) waits in a way that a failing batch cuts
            short, so requests still in flight give up promptly. Tests pass a recorder.
        jitter: Returns a float in ``[0, 1)``.

    Example:
        >>> RetryPolicy(jitter=lambda: 1.0).delay(3)
        4.0
    """

    max_attempts: int = 4
    base_delay: float = 1.0
    max_delay: float = 20.0
    sleep: Callable[[float], None] | None = field(default=None, repr=False)
    jitter: Callable[[], float] = field(default=random.random, repr=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise InvalidArgumentError(f"max_attempts must be >= 1, got {self.max_attempts}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return self.jitter() * min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))


@dataclass(frozen=True)
class BedrockUsage:
    """What an embedder has spent so far.

    Attributes:
        input_tokens: Tokens billed (the sum of ``inputTextTokenCount``).
        requests: ``InvokeModel`` calls made, retries included.
        retries: Calls that repeated a failed one.
        capped_texts: Texts cut to the model's limits before sending.
        price_per_1k_tokens_usd: Price used for the estimate.

    Example:
        >>> u = BedrockUsage(input_tokens=1_500_000, requests=3000, retries=2)
        >>> round(u.estimated_cost_usd, 4)
        0.03
        >>> (u - BedrockUsage(input_tokens=500_000, requests=1000)).to_dict()["input_tokens"]
        1000000
    """

    input_tokens: int = 0
    requests: int = 0
    retries: int = 0
    capped_texts: int = 0
    price_per_1k_tokens_usd: float = PRICE_PER_1K_TOKENS_USD

    @property
    def estimated_cost_usd(self) -> float:
        """``input_tokens`` at ``price_per_1k_tokens_usd``: an estimate, not a bill."""
        return self.input_tokens / 1000 * self.price_per_1k_tokens_usd

    def __sub__(self, earlier: BedrockUsage) -> BedrockUsage:
        """The usage between an earlier snapshot and this one (e.g. one ``index`` run)."""
        return BedrockUsage(
            input_tokens=self.input_tokens - earlier.input_tokens,
            requests=self.requests - earlier.requests,
            retries=self.retries - earlier.retries,
            capped_texts=self.capped_texts - earlier.capped_texts,
            price_per_1k_tokens_usd=self.price_per_1k_tokens_usd,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, the cost estimate included."""
        return {**asdict(self), "estimated_cost_usd": self.estimated_cost_usd}


def make_session(region: str | None = None, profile: str | None = None) -> Any:
    """A boto3 session resolving region and profile the usual way, with clear errors.

    ``None`` means what the AWS CLI does: ``AWS_PROFILE``, ``AWS_REGION`` /
    ``AWS_DEFAULT_REGION``, then ``~/.aws/config``.

    Args:
        region: AWS region, e.g. ``"us-east-1"``.
        profile: Named profile from the AWS config files.

    Returns:
        A ``boto3.Session`` with a region.

    Raises:
        BedrockError: ``no-credentials`` for an unknown profile, ``no-region`` if no region resolves.
        ImportError: If boto3 is not installed.

    Example:
        >>> make_session(region="eu-central-1").region_name
        'eu-central-1'
    """
    try:
        import boto3
        from botocore.exceptions import ProfileNotFound
    except ImportError as exc:
        raise ImportError("the Bedrock embedder needs boto3 (pip install 'memlane[bedrock]')") from exc
    try:
        session = boto3.Session(profile_name=profile, region_name=region)
    except ProfileNotFound as exc:
        raise BedrockError("no-credentials", f"AWS profile not found ({exc}): {_NO_CREDENTIALS_HINT}") from None
    if not session.region_name:
        raise BedrockError(
            "no-region",
            "no AWS region configured: set AWS_REGION (or AWS_DEFAULT_REGION), add a region to your "
            "AWS profile, or pass region= (Titan Text Embeddings V2 is offered e.g. in us-east-1)",
        )
    return session


def _botocore_retries_off(client: Any) -> bool:
    retries = client.meta.config.retries or {}
    if "total_max_attempts" in retries:
        return int(retries["total_max_attempts"]) == 1
    return int(retries.get("max_attempts", -1)) == 0


class BedrockEmbedder:
    """Titan Text Embeddings V2 on Amazon Bedrock, on-demand.

    Each text is one window: it is cut to 50,000 characters and an estimated 8,192 tokens
    (see :func:`cap_text`) and sent as one ``InvokeModel`` request. Up to ``concurrency``
    requests are in flight at once through a single client (boto3 clients are thread-safe;
    its connection pool is sized to match); results come back in input order.

    Retries happen here and only here (the client is built with botocore retries off):
    throttling, ``ModelNotReady``, model timeouts, 5xx and connection errors are retried
    with exponential backoff and full jitter, up to ``retry.max_attempts`` attempts in all.
    Validation, access and credential errors are not retried and raise
    :class:`BedrockError` with one line naming the cause.

    Returned vectors are always unit length because memlane indexes use cosine: with
    ``normalize=False`` the service returns raw vectors and they are normalised here, so
    ``normalize`` changes what is sent, not the space, and is not part of ``id``.
    An empty or blank text is not sent (Titan rejects it) and gets a fixed unit vector.

    Attributes:
        id: ``"bedrock/amazon.titan-embed-text-v2:0/<dimensions>"``.
        dim: 1024, 512 or 256.
        max_window_tokens: 8192.
        normalize: What is asked of the service.
        concurrency: Most requests in flight.
        region: The client's region.
        retry: The retry policy.

    Example, with AWS credentials under the profile ``prod``::

        emb = BedrockEmbedder(region="us-east-1", profile="prod", concurrency=32)
        emb.embed_query("why did the deploy fail?").shape  # (1024,)
        emb.usage.requests  # 1
    """

    def __init__(
        self,
        dimensions: int = 1024,
        normalize: bool = True,
        *,
        region: str | None = None,
        profile: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        retry: RetryPolicy | None = None,
        client: Any = None,
        price_per_1k_tokens_usd: float = PRICE_PER_1K_TOKENS_USD,
    ) -> None:
        """Build the client (no request is made until the first embedding).

        Args:
            dimensions: 1024 (default), 512 or 256.
            normalize: Ask Titan for unit vectors (returned vectors are unit either way).
            region: AWS region; default from ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` / the profile.
            profile: AWS profile; default ``AWS_PROFILE`` or the default chain.
            concurrency: Most requests in flight at once (>= 1).
            retry: Retry policy; default 4 attempts, 1 s base, 20 s cap.
            client: A ``bedrock-runtime`` client to use instead of building one (tests,
                custom endpoints); it must have botocore retries off
                (``Config(retries={"total_max_attempts": 1})``) so that there is one retry layer.
            price_per_1k_tokens_usd: Price for the cost estimate.

        Raises:
            memlane.errors.InvalidArgumentError: On unsupported ``dimensions``, ``concurrency`` < 1, or a client
                that retries by itself.
            BedrockError: If no region resolves or the profile does not exist.
            ImportError: If boto3 is missing.
        """
        if dimensions not in DIMENSIONS:
            raise InvalidArgumentError(f"Titan V2 dimensions must be one of {DIMENSIONS}, got {dimensions}")
        if concurrency < 1:
            raise InvalidArgumentError(f"concurrency must be >= 1, got {concurrency}")
        if client is None:
            from botocore.config import Config

            session = make_session(region, profile)
            config = Config(
                retries={"mode": "standard", "total_max_attempts": 1},
                max_pool_connections=max(10, concurrency),
                connect_timeout=10,
                read_timeout=60,
                user_agent_extra="memlane",
            )
            client = session.client("bedrock-runtime", config=config)
        elif not _botocore_retries_off(client):
            raise InvalidArgumentError(
                "the bedrock-runtime client retries by itself; build it with "
                "Config(retries={'total_max_attempts': 1}) so that retries happen in one layer"
            )
        import botocore.exceptions

        self._exc = botocore.exceptions
        self._client = client
        self.region: str = client.meta.region_name
        self.dim = dimensions
        self.normalize = normalize
        self.id = f"bedrock/{MODEL_ID}/{dimensions}"
        self.max_window_tokens = MAX_INPUT_TOKENS
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self._price = price_per_1k_tokens_usd
        self._lock = threading.Lock()
        self._tokens = self._requests = self._retries = self._capped = 0
        self._pool: ThreadPoolExecutor | None = None

    # -- public ---------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The shared ``bedrock-runtime`` client (e.g. to attach botocore's Stubber in tests)."""
        return self._client

    @property
    def usage(self) -> BedrockUsage:
        """A snapshot of tokens billed, requests, retries and capped texts since construction."""
        with self._lock:
            return BedrockUsage(self._tokens, self._requests, self._retries, self._capped, self._price)

    def embed_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Embed texts, one request each, up to ``concurrency`` at a time.

        On the first request that fails for good, requests not yet started are cancelled,
        the ones in flight stop retrying, and the error is raised; tokens already billed
        stay counted in :attr:`usage`.

        Args:
            texts: The texts.

        Returns:
            Per text, in order, a float32 C-contiguous ``(1, dim)`` array with a unit row.

        Raises:
            memlane.errors.ArgumentTypeError: If ``texts`` is a single string.
            BedrockError: On a failure retrying did not (or could not) fix.

        Example, with AWS credentials::

            [v.shape for v in emb.embed_documents(["a", "b"])]  # [(1, 1024), (1, 1024)]
        """
        if isinstance(texts, str):
            raise ArgumentTypeError("embed_documents takes a sequence of strings, not a single string")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        todo: list[tuple[int, str]] = []
        capped = 0
        for i, text in enumerate(texts):
            sent = cap_text(text)
            capped += len(sent) < len(text)
            if sent.strip():
                todo.append((i, sent))
            else:
                out[i] = blank_vector(self.dim)
        if capped:
            with self._lock:
                self._capped += capped
        for i, vector in self._run(todo):
            out[i] = vector
        return [out[i : i + 1] for i in range(len(texts))]

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query (Titan V2 embeds queries and documents alike).

        Args:
            text: The query.

        Returns:
            A float32 ``(dim,)`` unit vector.

        Raises:
            BedrockError: On a failure retrying did not (or could not) fix.

        Example, with AWS credentials::

            emb.embed_query("which database does billing use?").shape  # (1024,)
        """
        vector: np.ndarray = self.embed_documents([text])[0][0]
        return vector

    def close(self) -> None:
        """Stop the worker threads (the embedder can still be used; they restart on demand)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> BedrockEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------

    def _run(self, todo: list[tuple[int, str]]) -> list[tuple[int, np.ndarray]]:
        """``(index, unit vector)`` for every ``(index, text)``, through the bounded pool."""
        stop = threading.Event()
        if self.concurrency == 1 or len(todo) <= 1:
            return [(i, self._invoke(text, stop)) for i, text in todo]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="memlane-bedrock")
            pool = self._pool
        # The pool's worker count is the bound on requests in flight; queued futures wait.
        futures: list[Future[np.ndarray]] = [pool.submit(self._invoke, text, stop) for _, text in todo]
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        failed = [f for f in futures if f in done and f.exception() is not None]
        if failed:
            # Fail fast: a wrong region or missing model access would otherwise cost every
            # remaining text its full retry schedule before the error surfaced.
            stop.set()
            for f in pending:
                f.cancel()
            wait(pending)
            raise failed[0].exception()  # type: ignore[misc]
        return [(i, f.result()) for (i, _), f in zip(todo, futures)]

    def _invoke(self, text: str, stop: threading.Event) -> np.ndarray:
        """One text's unit vector, retrying transient failures."""
        body = json.dumps(model_input(text, self.dim, self.normalize))
        exc_mod = self._exc
        attempt = 0
        while True:
            attempt += 1
            with self._lock:
                self._requests += 1
                self._retries += attempt > 1
            try:
                response = self._client.invoke_model(
                    modelId=MODEL_ID, body=body, contentType="application/json", accept="application/json"
                )
                payload = json.loads(response["body"].read())
            except exc_mod.ClientError as exc:
                if not self._retryable(exc) or attempt >= self.retry.max_attempts or stop.is_set():
                    raise self._client_error(exc, attempt) from None
            except (exc_mod.ConnectionError, exc_mod.HTTPClientError) as exc:
                if attempt >= self.retry.max_attempts or stop.is_set():
                    raise BedrockError(
                        "connection",
                        f"could not reach Bedrock in region {self.region} after {attempt} attempt(s) ({exc}): "
                        "check the region name and the network",
                    ) from None
            except (
                exc_mod.NoCredentialsError,
                exc_mod.PartialCredentialsError,
                exc_mod.CredentialRetrievalError,
                exc_mod.TokenRetrievalError,
                exc_mod.SSOError,
            ) as exc:
                message = f"no usable AWS credentials ({exc}): {_NO_CREDENTIALS_HINT}"
                raise BedrockError("no-credentials", message) from None
            except json.JSONDecodeError as exc:
                raise BedrockError("invalid-response", f"Titan response is not JSON ({exc})") from None
            else:
                return self._parse(payload)
            if self.retry.sleep is None:
                stop.wait(self.retry.delay(attempt))
            else:
                self.retry.sleep(self.retry.delay(attempt))
            if stop.is_set():
                raise BedrockError("request-failed", "cancelled because another request in the batch failed")

    def _parse(self, payload: Any) -> np.ndarray:
        try:
            vector = np.asarray(payload["embedding"], dtype=np.float32)
            tokens = int(payload["inputTextTokenCount"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BedrockError("invalid-response", f"unexpected Titan response ({exc!r})") from None
        if vector.shape != (self.dim,):
            raise BedrockError(
                "invalid-response", f"Titan returned a vector of shape {vector.shape}, expected ({self.dim},)"
            )
        with self._lock:
            self._tokens += tokens
        row: np.ndarray = unit_rows(vector[None, :])[0]
        return row

    @staticmethod
    def _retryable(exc: Any) -> bool:
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in _RETRYABLE_CODES or status >= 500

    def _client_error(self, exc: Any, attempts: int) -> BedrockError:
        """The one-line error for a Bedrock error response that ends the request."""
        code = exc.response.get("Error", {}).get("Code", "") or "Unknown"
        message = exc.response.get("Error", {}).get("Message", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        detail = f"{code}: {message}" if message else code
        where = f"model {MODEL_ID} in region {self.region}"
        if code == "AccessDeniedException":
            return BedrockError(
                "no-model-access",
                f"no access to {where} ({detail}): enable the model under Bedrock > Model access in that "
                "region and allow bedrock:InvokeModel for your IAM identity",
            )
        if code == "ResourceNotFoundException" or (
            code == "ValidationException" and "model identifier" in message.lower()
        ):
            return BedrockError(
                "wrong-region",
                f"{where} is not available ({detail}): use a region that offers Titan Text Embeddings V2, "
                "e.g. us-east-1 or us-west-2 (set AWS_REGION or pass region=)",
            )
        if code in _BAD_CREDENTIAL_CODES:
            return BedrockError(
                "bad-credentials",
                f"AWS rejected the credentials for region {self.region} ({detail}): they are wrong or "
                f"expired, or the region is not enabled for the account; {_NO_CREDENTIALS_HINT}",
            )
        if code == "ValidationException":
            return BedrockError("invalid-request", f"Bedrock rejected the request for {where} ({detail})")
        if code == "ServiceQuotaExceededException":
            return BedrockError("quota", f"Bedrock quota exceeded for {where} ({detail})")
        if code == "ModelErrorException":
            return BedrockError("model-error", f"{where} failed on the input ({detail})")
        if code in _THROTTLING_CODES:
            return BedrockError(
                "throttled",
                f"Bedrock still throttled {where} after {attempts} attempt(s) ({detail}): lower the "
                f"concurrency (now {self.concurrency}) or ask for a higher requests-per-minute quota",
            )
        if self._retryable(exc):
            return BedrockError(
                "unavailable", f"Bedrock kept failing for {where} after {attempts} attempt(s) ({detail}, HTTP {status})"
            )
        return BedrockError("request-failed", f"Bedrock request for {where} failed ({detail}, HTTP {status})")

"""Triples from an LLM: :class:`OpenAIExtractor` on any OpenAI-compatible chat endpoint.

Each chunk gets two requests, in the shape of HippoRAG's (OSU-NLP-Group/HippoRAG,
``src/hipporag/prompts/templates/ner.py`` and ``triple_extraction.py``): a system message,
a one-shot example (a user passage and the assistant's JSON answer) and the chunk:

1. **NER**: the answer is ``{"named_entities": ["...", ...]}``;
2. **OpenIE**, conditioned on those entities: the answer is
   ``{"triples": [["subject", "relation", "object"], ...]}``.

What it does around the requests:

* **cache**: every response is stored on disk (one JSON file per request, written
  atomically) under the SHA-256 of the model, the messages and the sampling settings, so a
  re-run, or a run killed half-way and started again, sends only the requests it has no
  answer for; the endpoint's URL is not part of the key (a proxy of the same model shares
  the answers);
* **bounded concurrency**: a thread pool of ``max_concurrency`` workers, one chunk
  (NER then OpenIE) per task, over one pooled ``httpx.Client`` with as many connections.
  Threads rather than asyncio: :func:`~graphrecall.ingest.ingest` is a plain function
  that may be called from inside a running event loop (a notebook), where ``asyncio.run``
  fails, and the work is waiting on sockets, which releases the GIL;
* **retries** on 429, 408, any 5xx, a timeout or a dropped connection: up to
  ``max_retries`` more attempts, waiting what the server's ``Retry-After`` (or
  ``retry-after-ms``) header asks, else an exponential backoff
  ``min(max_backoff, backoff * 2**attempt)`` times a jitter factor drawn in [0.5, 1];
  other statuses (400, 401, 404 ...) fail at once with the server's message;
* **token accounting**: ``usage.prompt_tokens`` and ``usage.completion_tokens`` of every
  response received (not of cached ones) are summed into :class:`~.protocol.Usage`, per
  chunk (``Extraction.usage``), per ingest call (``IngestReport.usage``) and over the
  extractor's life (:attr:`OpenAIExtractor.usage`);
* **tolerant parsing**: code fences and text around the JSON are ignored (the first JSON
  object holding the expected key is read); an answer with none is *malformed*: that
  step's output is skipped and counted (``Usage.malformed``, ``Extraction.problems``), or
  an :class:`~.protocol.ExtractorError` under ``strict=True``. Entries that are not
  strings, and triples that are not three non-empty strings, are dropped and counted
  (``Usage.dropped``).

The client is httpx (the ``llm`` extra), not the ``openai`` package: one POST endpoint is
all that is needed, and the SDK's own retry loop would stack on this one (hiding
``Retry-After`` and the retry count from the report) while adding a dependency.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ParameterError
from .prompts import Message, ner_messages, openie_messages, parse_entities, parse_triples
from .protocol import Extraction, ExtractorError, Triple, Usage

if TYPE_CHECKING:
    import httpx

__all__ = [
    "API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "OpenAIExtractor",
    "ResponseCache",
    "default_cache_dir",
]

#: Where requests go unless told otherwise.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: The environment variable the API key is read from by default.
API_KEY_ENV = "OPENAI_API_KEY"

# ---------------------------------------------------------------------------- cache


def default_cache_dir() -> Path:
    """``$GRAPHRECALL_CACHE/llm``, else ``$XDG_CACHE_HOME/graphrecall/llm``, else
    ``~/.cache/graphrecall/llm``."""
    root = os.environ.get("GRAPHRECALL_CACHE")
    if root:
        return Path(root) / "llm"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "graphrecall" / "llm"


class ResponseCache:
    """Chat responses on disk, one JSON file per request key, written atomically (a
    temporary file renamed into place), so concurrent writers and killed runs leave only
    whole files.

    Args:
        root: The cache directory (created when first written).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @staticmethod
    def key(body: Mapping[str, Any]) -> str:
        """The SHA-256 of ``body`` (model, messages, sampling settings) as canonical JSON."""
        raw = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response, or None (none stored, or an unreadable file)."""
        try:
            with open(self._path(key), encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, response: Mapping[str, Any]) -> None:
        """Stores ``response`` under ``key``."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(response, f, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


# ---------------------------------------------------------------------------- the extractor

_RETRY_STATUS = frozenset({408, 429})


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms``, or ``Retry-After`` in seconds or
    as an HTTP date), None when it says nothing readable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(ra)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIExtractor:
    """HippoRAG-style NER + OpenIE over an OpenAI-compatible chat-completions endpoint (see
    the module doc). Implements :class:`~graphrecall.ingest.Extractor`.

    Args:
        model: The model name the endpoint knows (``"gpt-4o-mini"``, ``"llama3.1"``).
        base_url: The API root; requests go to ``{base_url}/chat/completions``.
        api_key: The bearer token; None reads the ``api_key_env`` environment variable
            (no ``Authorization`` header when that is unset too: local servers need none).
        api_key_env: The variable the key is read from.
        cache_dir: Where responses are cached (None: :func:`default_cache_dir`).
        cache: Read and write the cache (False: every request goes to the endpoint).
        max_concurrency: Chunks in flight at once (threads, and pooled connections).
        max_retries: Attempts after the first one on 429 / 408 / 5xx / timeouts.
        timeout: Seconds each step of a request may take (connecting, sending, waiting for
            each read); past it the attempt counts as timed out and is retried.
        backoff: The first retry's wait, in seconds, when the server gives no
            ``Retry-After``; doubled on each attempt, jittered in [0.5, 1] of that.
        max_backoff: The longest computed wait, in seconds.
        max_retry_after: The longest ``Retry-After`` honoured; a server asking more fails
            the run at once (a spent quota, not a burst).
        temperature: The sampling temperature (0: the same answer for the same prompt).
        max_tokens: The completion limit per request (None: the endpoint's).
        json_mode: Send ``response_format={"type": "json_object"}`` (not every server has it).
        strict: Raise :class:`ExtractorError` on a malformed answer instead of skipping it.
        headers: Extra HTTP headers (e.g. an organisation or a gateway's key).
        transport: An httpx transport (tests, proxies); None: httpx's default.
        sleep: Waits between retries (``time.sleep``).
        seed: Seeds the jitter, for reproducible waits.

    Raises:
        ParameterError: A bad setting.
        ImportError: httpx is not installed (``pip install 'graphrecall[llm]'``).

    Example:
        >>> ex = OpenAIExtractor("gpt-4o-mini")  # doctest: +SKIP
        >>> tables = ingest("docs/", extractor=ex)  # doctest: +SKIP
        >>> print(ex.usage)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        api_key_env: str = API_KEY_ENV,
        cache_dir: str | os.PathLike[str] | None = None,
        cache: bool = True,
        max_concurrency: int = 8,
        max_retries: int = 6,
        timeout: float = 60.0,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        max_retry_after: float = 300.0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_mode: bool = False,
        strict: bool = False,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int | None = None,
    ) -> None:
        import httpx

        if not isinstance(model, str) or not model:
            raise ParameterError(
                "invalid parameter model: a model name is needed", parameter="model"
            )
        for pname, value, low in (
            ("max_concurrency", max_concurrency, 1),
            ("max_retries", max_retries, 0),
        ):
            if not isinstance(value, int) or value < low:
                raise ParameterError(
                    f"invalid parameter {pname}: {value!r} is not an int >= {low}",
                    parameter=pname,
                    kind="invalid_parameter",
                    input=value,
                )
        for pname, fvalue in (
            ("timeout", timeout),
            ("backoff", backoff),
            ("max_backoff", max_backoff),
            ("max_retry_after", max_retry_after),
        ):
            if not fvalue >= 0 or (pname == "timeout" and fvalue == 0):
                raise ParameterError(
                    f"invalid parameter {pname}: {fvalue!r} seconds",
                    parameter=pname,
                    kind="invalid_parameter",
                    input=fvalue,
                )
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.json_mode = json_mode
        self.strict = strict
        self.cache = ResponseCache(cache_dir or default_cache_dir()) if cache else None
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._usage = Usage()
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        if key:
            hdrs["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(
            headers=hdrs,
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(
                max_connections=max_concurrency, max_keepalive_connections=max_concurrency
            ),
            transport=transport,
        )

    @property
    def name(self) -> str:
        """``"openai:<model>"``."""
        return f"openai:{self.model}"

    @property
    def usage(self) -> Usage:
        """Everything this extractor spent and met so far (a copy)."""
        with self._lock:
            return self._usage + Usage()

    def close(self) -> None:
        """Closes the HTTP connections."""
        self._client.close()

    def __enter__(self) -> OpenAIExtractor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ extraction

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """NER then OpenIE for each text, ``max_concurrency`` texts at a time.

        Returns:
            One :class:`Extraction` per text, in order.

        Raises:
            ExtractorError: A request was refused, or failed after every retry (the answers
                received so far are cached: a re-run does not pay for them again), or an
                answer was malformed under ``strict=True``.
        """
        if not texts:
            return []
        if self.max_concurrency == 1 or len(texts) == 1:
            return [self._one(t) for t in texts]
        with ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="llm") as pool:
            futures = [pool.submit(self._one, t) for t in texts]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def _one(self, text: str) -> Extraction:
        usage = Usage()
        problems: list[str] = []
        entities: list[str] = []
        triples: list[Triple] = []
        content = self._chat(ner_messages(text), usage)
        try:
            entities, dropped = parse_entities(content[0])
            usage.dropped += dropped
        except ValueError as exc:
            self._malformed("NER", '{"named_entities": [...]}', content, exc, usage, problems)
        content = self._chat(openie_messages(text, entities), usage)
        try:
            triples, dropped = parse_triples(content[0])
            usage.dropped += dropped
        except ValueError as exc:
            self._malformed(
                "OpenIE", '{"triples": [[s, r, o], ...]}', content, exc, usage, problems
            )
        with self._lock:
            self._usage += usage
        return Extraction(tuple(entities), tuple(triples), usage, tuple(problems))

    def _malformed(
        self,
        step: str,
        shape: str,
        content: tuple[str, str | None],
        exc: ValueError,
        usage: Usage,
        problems: list[str],
    ) -> None:
        text, finish = content
        why = f"{step} answer is not the JSON expected ({shape}): {exc}"
        if finish == "length":
            why += " (finish_reason 'length': the answer was cut at max_tokens)"
        if self.strict:
            raise ExtractorError(
                f"{why}; the answer began {text[:200]!r}",
                kind="malformed_output",
                input=text[:2000],
                ctx={"step": step, "finish_reason": finish},
            )
        usage.malformed += 1
        problems.append(why)

    def _body(self, messages: list[Message]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    def _chat(self, messages: list[Message], usage: Usage) -> tuple[str, str | None]:
        """The answer's content and finish reason for ``messages``, from the cache or the
        endpoint (stored in the cache then); content ``""`` when the response has none."""
        body = self._body(messages)
        key = ResponseCache.key(body)
        data = self.cache.get(key) if self.cache is not None else None
        if data is not None:
            usage.cached += 1
        else:
            data = self._post(body, usage)
            u = data.get("usage")
            if isinstance(u, dict):
                usage.prompt_tokens += _int(u.get("prompt_tokens"))
                usage.completion_tokens += _int(u.get("completion_tokens"))
            if self.cache is not None:
                self.cache.put(key, data)
        try:
            choice = data["choices"][0]
            content = choice["message"]["content"]
            finish = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError):
            return "", None
        return (content if isinstance(content, str) else ""), (
            finish if isinstance(finish, str) else None
        )

    def _post(self, body: dict[str, Any], usage: Usage) -> dict[str, Any]:
        """POSTs ``body``, retrying as the module doc says; the decoded response."""
        import httpx

        url = f"{self.base_url}/chat/completions"
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            try:
                r = self._client.post(url, json=body)
            except httpx.TimeoutException as exc:
                reason = f"timed out ({type(exc).__name__})"
            except httpx.TransportError as exc:
                reason = f"connection failed ({type(exc).__name__}: {exc})"
            else:
                usage.requests += 1
                if r.status_code == 200:
                    try:
                        data = r.json()
                    except ValueError:
                        data = None
                    if not isinstance(data, dict):
                        raise ExtractorError(
                            f"{url} answered 200 with a body that is not a JSON object: "
                            f"{r.text[:200]!r}",
                            kind="malformed_output",
                            ctx={"status": 200, "body": r.text[:2000]},
                        )
                    return data
                reason = f"HTTP {r.status_code}"
                if r.status_code not in _RETRY_STATUS and r.status_code < 500:
                    raise ExtractorError(
                        f"{url} refused the request: HTTP {r.status_code}: {_error_text(r)}",
                        kind="http_status",
                        ctx={"status": r.status_code, "body": r.text[:2000]},
                    )
                wait = _retry_after(r.headers)
                if wait is not None and wait > self.max_retry_after:
                    raise ExtractorError(
                        f"{url} asks to wait {wait:.0f} s before retrying (HTTP "
                        f"{r.status_code}, Retry-After), more than max_retry_after="
                        f"{self.max_retry_after:g}: {_error_text(r)}",
                        kind="retries_exhausted",
                        ctx={"status": r.status_code, "retry_after": wait},
                    )
            if attempt == self.max_retries:
                raise ExtractorError(
                    f"{url}: no answer after {attempt + 1} attempts; the last one {reason}",
                    kind="retries_exhausted",
                    ctx={"attempts": attempt + 1, "last": reason},
                )
            if wait is None:
                with self._lock:
                    jitter = self._rng.uniform(0.5, 1.0)
                wait = min(self.max_backoff, self.backoff * 2.0**attempt) * jitter
            usage.retries += 1
            self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0


def _error_text(r: httpx.Response) -> str:
    """The error message of an OpenAI-style error body, else the body's start."""
    try:
        data = r.json()
        msg = data["error"]["message"]
        if isinstance(msg, str):
            return msg
    except (ValueError, KeyError, TypeError):
        pass
    return r.text[:300]

"""The settings of ``graphrecall serve``: limits, timeouts and micro-batching."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..errors import ParameterError

__all__ = ["ServiceConfig"]


@dataclass(frozen=True)
class ServiceConfig:
    """Limits and knobs of the service (the ``graphrecall serve`` flags).

    Attributes:
        api_key: Required in ``Authorization: Bearer <key>`` or ``X-API-Key`` on every
            endpoint but ``/healthz`` and ``/readyz`` (None: no key).
        max_body_bytes: Larger request bodies are refused with 413.
        max_batch: Most queries in one ``/retrieve`` request (413 above).
        max_write_rows: Most records in one write request (413 above).
        request_timeout_s: A read request still running after this is answered 503
            (writes are never cut short: an acknowledged write is committed).
        read_timeout_s: A client slower than this to send its headers or its body is
            answered 408 and disconnected.
        batch_wait_ms: How long a single query waits for others with the same recipe,
            tenant and parameters while the workers are busy (0: no coalescing wait).
        batch_max: Most queries coalesced into one ``retrieve_batch`` call.
        batching: Coalesce concurrent single queries (False: one call per request).
        workers: Threads that run retrieval off the event loop (the native work releases
            the GIL).
        inline_max: A flush of at most this many single queries, every one with its
            vector given (no embedding), runs on the event loop's thread rather than a
            worker's: cheaper than the thread hop (0: always on a worker).
        use_cache: Let requests use the result cache by default.
    """

    api_key: str | None = None
    max_body_bytes: int = 1 << 20
    max_batch: int = 256
    max_write_rows: int = 10_000
    request_timeout_s: float = 10.0
    read_timeout_s: float = 10.0
    batch_wait_ms: float = 1.0
    batch_max: int = 64
    batching: bool = True
    workers: int = 2
    inline_max: int = 4
    use_cache: bool = True

    def __post_init__(self) -> None:
        """Refuse limits that cannot work (zero or negative sizes, counts and timeouts).

        Raises:
            ParameterError: Naming the setting.
        """
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or f.name == "api_key":
                continue
            lowest = 0 if f.name in ("batch_wait_ms", "inline_max") else 1e-9
            if not isinstance(v, (int, float)) or not v >= lowest:
                raise ParameterError(
                    f"invalid parameter {f.name}: {v!r} (give a positive number)",
                    kind="invalid_parameter",
                    parameter=f.name,
                    input=v,
                )
        if self.api_key is not None and not self.api_key:
            raise ParameterError(
                "invalid parameter api_key: empty (give None for no key)",
                kind="invalid_parameter",
                parameter="api_key",
            )

"""HTTP errors of the service, in the structure of the Python exceptions.

Every error response is ``{"error": {"type": ..., "message": ..., "errors": [...]}}``:
``type`` is the exception's class name (``ParameterError``, ``UnknownTenantError``, ...),
``message`` its text and ``errors`` its :meth:`~graphrecall.errors.GraphRecallError.errors`
(``type`` (the kind), ``loc``, ``msg``, ``input``, ``ctx``), so an HTTP caller reads the same
fields a Python caller does. Problems of the request itself (malformed JSON, a body over the
limit, a wrong API key) are :class:`RequestError` s with their HTTP status.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import (
    GraphRecallError,
    OutOfMemoryError,
    StorageError,
    UnknownIdError,
    UnknownTenantError,
)

__all__ = ["RequestError", "error_body", "status_of"]


class RequestError(GraphRecallError):
    """A request the service refuses before it reaches the API; ``status`` is its HTTP
    status and ``kind`` says why (``json_invalid``, ``body_too_large``, ``batch_too_large``,
    ``unauthorized``, ``missing``, ``timeout``, ...)."""

    def __init__(self, status: int, message: str, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.status = status


def status_of(exc: BaseException) -> int:
    """The HTTP status of an exception raised while serving a request."""
    if isinstance(exc, RequestError):
        return exc.status
    if isinstance(exc, (UnknownTenantError, UnknownIdError)):
        return 404
    if isinstance(exc, OutOfMemoryError):
        return 503
    if isinstance(exc, StorageError):
        return 500
    if isinstance(exc, (GraphRecallError, ValueError)):
        return 422
    return 500


def _jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else its ``repr`` (an error's ``input`` may be any object)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def error_body(exc: BaseException) -> dict[str, Any]:
    """The JSON body of an error response (see the module docstring)."""
    if isinstance(exc, GraphRecallError):
        errors = [
            {
                "type": e["type"],
                "loc": list(e["loc"]),
                "msg": e["msg"],
                "input": _jsonable(e["input"]),
                "ctx": {k: _jsonable(v) for k, v in e["ctx"].items()},
            }
            for e in exc.errors()
        ]
    else:
        kind = "internal" if status_of(exc) >= 500 else "invalid_value"
        msg = "internal error" if kind == "internal" else str(exc)
        errors = [{"type": kind, "loc": [None, None, None], "msg": msg, "input": None, "ctx": {}}]
    message = errors[0]["msg"] if errors else str(exc)
    if status_of(exc) >= 500 and not isinstance(exc, GraphRecallError):
        message = "internal error"
    return {"error": {"type": type(exc).__name__, "message": message, "errors": errors}}

"""``graphrecall serve``: an HTTP retrieval service over a saved index or a SQLite store.

Starlette on uvicorn (httptools, uvloop); see :mod:`.app` for the endpoints, :mod:`.batcher`
for the micro-batching and :mod:`.errors` for the error bodies. Needs the ``serve`` extra
(``pip install graphrecall[serve]``); the names load on first use, so that ``graphrecall``'s
other commands run without it.

Example:
    >>> from graphrecall.service import Backend, ServiceConfig, create_app  # doctest: +SKIP
    >>> cfg = ServiceConfig(api_key="s3cret")  # doctest: +SKIP
    >>> app = create_app(Backend.open("index_dir"), cfg)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .config import ServiceConfig

if TYPE_CHECKING:
    from .app import create_app
    from .backend import Backend
    from .cli import serve
    from .errors import RequestError
    from .state import Service

__all__ = ["Backend", "RequestError", "Service", "ServiceConfig", "create_app", "serve"]

_WHERE = {
    "Backend": ".backend",
    "RequestError": ".errors",
    "Service": ".state",
    "create_app": ".app",
    "serve": ".cli",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(where, __name__), name)

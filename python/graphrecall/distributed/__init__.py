"""graphrecall beyond one machine, on Ray: a sharded Ray Serve service with the same
retrieval API (:class:`DistributedRAG`), and bulk embedding / index building with Ray Data
(:func:`build_indexes`).

Needs the ``distributed`` extra (``pip install 'graphrecall[distributed]'``); the layout
functions (:func:`write_shards`, :func:`shard_of`) run without Ray, and the Ray names load
on first use.

Example:
    >>> import ray
    >>> from graphrecall.distributed import DistributedRAG, write_shards
    >>> write_shards(tables, "shards", 2)  # doctest: +SKIP
    >>> ray.init()  # doctest: +SKIP
    >>> rag = DistributedRAG.deploy("shards", replicas=2)  # doctest: +SKIP
    >>> rag.retrieve("What is JACQ?", tenant="alice", recipe="ppr")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .layout import ShardLayout, shard_of, split_tables, tenant_key, write_shards

if TYPE_CHECKING:
    from .data import build_indexes
    from .serving import DistributedRAG, ShardUnavailableError
    from .shard import ShardReply, ShardRequest

__all__ = [
    "DistributedRAG",
    "ShardLayout",
    "ShardReply",
    "ShardRequest",
    "ShardUnavailableError",
    "build_indexes",
    "shard_of",
    "split_tables",
    "tenant_key",
    "write_shards",
]

_WHERE = {
    "DistributedRAG": ".serving",
    "ShardUnavailableError": ".serving",
    "ShardReply": ".shard",
    "ShardRequest": ".shard",
    "build_indexes": ".data",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(where, __name__), name)

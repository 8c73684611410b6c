"""Where each tenant lives: a stable hash of the tenant key picks its shard, and a shard
directory holds the durable SQLite store and the saved index of its tenants.

A directory laid out by :func:`write_shards`::

    layout.json                 {"shards": 2, "tenants": {"0": [...], "1": [...]}}
    shard-000/store.sqlite      the shard's tables (source of truth, every write lands here)
    shard-000/index/            the shard's saved index (GraphRAG.save), for a fast cold start
    shard-001/...

Needs no Ray: the layout is plain files, so it is built, checked and read without a cluster.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..embed import Embedder
from ..errors import ParameterError, UnknownTenantError
from ..index import GraphIndex
from ..storage import SQLiteStore
from ..tables import EmbeddingSet, GraphTables

__all__ = [
    "LAYOUT_FILE",
    "ShardLayout",
    "shard_of",
    "split_tables",
    "tenant_key",
    "write_layout",
    "write_shard",
    "write_shards",
]

LAYOUT_FILE = "layout.json"
STORE_FILE = "store.sqlite"
INDEX_DIR = "index"


def tenant_key(tenant: Hashable | None) -> str:
    """The tenant's stable key: ``"s:<name>"`` for a str tenant, ``"i:<n>"`` for an int one,
    ``"-"`` for the tenant of a graph without a tenant column.

    Raises:
        ParameterError: ``tenant`` is neither a str nor an int.
    """
    if tenant is None:
        return "-"
    if isinstance(tenant, (int, np.integer)) and not isinstance(tenant, bool):
        return f"i:{int(tenant)}"
    if isinstance(tenant, str):
        return f"s:{tenant}"
    raise ParameterError(f"invalid parameter tenant: {type(tenant).__name__} is not a str or int")


def shard_of(tenant: Hashable | None, shards: int) -> int:
    """The shard of ``tenant`` among ``shards``: blake2b of :func:`tenant_key`, modulo the
    shard count (the same in every process and Python version, unlike ``hash()``)."""
    digest = hashlib.blake2b(tenant_key(tenant).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % shards


@dataclass(frozen=True)
class ShardLayout:
    """The shards of a directory and the tenants each one holds.

    Attributes:
        directory: The layout's root.
        shards: How many shards.
        tenants: Tenants by shard (as written; the hash decides where a new one goes).
    """

    directory: Path
    shards: int
    tenants: tuple[tuple[Hashable, ...], ...]

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> ShardLayout:
        """Read ``layout.json`` of a directory written by :func:`write_shards`.

        Raises:
            ParameterError: No layout file there.
        """
        root = Path(directory).resolve()
        f = root / LAYOUT_FILE
        if not f.is_file():
            raise ParameterError(f"{str(root)!r} holds no {LAYOUT_FILE} (see write_shards)")
        meta = json.loads(f.read_text())
        n = int(meta["shards"])
        tenants = tuple(tuple(meta["tenants"].get(str(s), [])) for s in range(n))
        return cls(root, n, tenants)

    def shard_of(self, tenant: Hashable | None) -> int:
        """The shard that holds ``tenant`` (None: the only tenant, when there is one).

        Raises:
            ParameterError: ``tenant`` is None and the layout holds several tenants (a query
                runs within one tenant: it never spans shards).
            UnknownTenantError: No shard holds ``tenant``.
        """
        if tenant is None:
            every = self.all_tenants()
            if len(every) != 1:
                raise ParameterError(
                    f"invalid parameter tenant: the service holds {len(every)} tenants on "
                    f"{self.shards} shards; name one"
                )
            tenant = every[0]
        s = shard_of(tenant, self.shards)
        if tenant not in self.tenants[s]:
            raise UnknownTenantError(
                f"unknown tenant {tenant!r}", kind="unknown_tenant", input=tenant
            )
        return s

    def all_tenants(self) -> list[Hashable]:
        """Every tenant, shard by shard."""
        return [t for ts in self.tenants for t in ts]

    def shard_dir(self, shard: int) -> Path:
        """The directory of ``shard``."""
        return self.directory / f"shard-{shard:03d}"

    def store_path(self, shard: int) -> Path:
        """The SQLite store of ``shard``."""
        return self.shard_dir(shard) / STORE_FILE

    def index_dir(self, shard: int) -> Path:
        """The saved index of ``shard``."""
        return self.shard_dir(shard) / INDEX_DIR


def _member(values: npt.NDArray[Any], keep: set[Any]) -> npt.NDArray[np.bool_]:
    return np.fromiter((v in keep for v in values.tolist()), dtype=bool, count=len(values))


def _rows(cols: Mapping[str, npt.NDArray[Any]], mask: npt.NDArray[np.bool_]) -> dict[str, Any]:
    return {k: v[mask] for k, v in cols.items()}


def split_tables(tables: GraphTables, shards: int) -> dict[int, GraphTables]:
    """The tables of each shard: every tenant's entities, facts (by subject), chunks,
    mentions, aliases and stored vectors go to :func:`shard_of` its tenant. Shards that get
    no tenant are left out.

    Raises:
        ParameterError: ``shards`` below 1.
    """
    if type(shards) is not int or shards < 1:
        raise ParameterError(f"invalid parameter shards: {shards!r}; expected an int >= 1")
    ent = tables.entities
    n_ent = len(ent["id"])
    if "tenant" in ent:
        ent_shard = np.array([shard_of(t, shards) for t in ent["tenant"].tolist()], dtype=int)
    else:
        ent_shard = np.full(n_ent, shard_of(None, shards), dtype=int)
    ch = tables.chunks
    ch_shard: npt.NDArray[Any] | None = None
    if ch is not None:
        if "tenant" in ch:
            ch_shard = np.array([shard_of(t, shards) for t in ch["tenant"].tolist()], dtype=int)
        else:
            ch_shard = np.full(len(ch["id"]), shard_of(None, shards), dtype=int)
    out: dict[int, GraphTables] = {}
    ids = ent["id"]
    for s in sorted(set(ent_shard.tolist()) | set([] if ch_shard is None else ch_shard.tolist())):
        emask = ent_shard == s
        eids = set(ids[emask].tolist())
        facts = _rows(tables.facts, _member(tables.facts["subject"], eids))
        chunks = mentions = None
        cids: set[Any] = set()
        if ch is not None and ch_shard is not None:
            cmask = ch_shard == s
            cids = set(ch["id"][cmask].tolist())
            chunks = _rows(ch, cmask)
        if tables.mentions is not None:
            mentions = _rows(tables.mentions, _member(tables.mentions["chunk"], cids))
        aliases = None
        alias_texts: set[Any] = set()
        if tables.aliases is not None:
            amask = _member(tables.aliases["entity"], eids)
            aliases = _rows(tables.aliases, amask)
            alias_texts = set(tables.aliases["alias"][amask].tolist())
        embeddings = []
        for e in tables.embeddings:
            keep = {"entity": eids, "chunk": cids, "alias": alias_texts}[e.kind]
            m = _member(e.ids, keep)
            embeddings.append(EmbeddingSet(e.kind, e.ids[m], e.vectors[m], e.model))
        out[s] = GraphTables(
            entities=_rows(ent, emask),
            facts=facts,
            chunks=chunks,
            mentions=mentions,
            aliases=aliases,
            embeddings=embeddings,
            statuses=tables.statuses,
            sources=tables.sources,
        )
    return out


def _tenants_of(tables: GraphTables) -> list[Hashable]:
    names: dict[Hashable, None] = {}
    for cols in (tables.entities, tables.chunks):
        if cols is not None and "tenant" in cols:
            names.update(dict.fromkeys(cols["tenant"].tolist()))
    if not names:
        return [None]
    return list(names)


def write_shard(
    part: GraphTables,
    directory: str | os.PathLike[str],
    shard: int,
    *,
    embedder: Embedder | str | None = "default",
    overwrite: bool = False,
) -> list[Hashable]:
    """Write one shard's SQLite store (with its vectors) and saved index under
    ``directory/shard-NNN``; returns the tenants it holds.

    Args:
        part: The shard's tables (see :func:`split_tables`).
        directory: The layout's root.
        shard: The shard's number.
        embedder: Embeds what ``part`` holds no vectors for (stored vectors are kept).
        overwrite: Replace a store already there.
    """
    layout = ShardLayout(Path(directory).resolve(), shard + 1, ())
    checked, _ = part.check()
    index = GraphIndex.build(checked, embedder=embedder, checked=True)
    checked.embeddings = index.embedding_sets()
    layout.shard_dir(shard).mkdir(parents=True, exist_ok=True)
    with SQLiteStore.create(layout.store_path(shard), overwrite=overwrite) as store:
        store.write(checked)
    index.save(layout.index_dir(shard))
    return _tenants_of(part)


def write_layout(
    directory: str | os.PathLike[str], shards: int, tenants: Mapping[int, list[Hashable]]
) -> ShardLayout:
    """Write ``layout.json`` (atomically: the last step of a build) and open it."""
    root = Path(directory).resolve()
    meta = {"shards": shards, "tenants": {str(s): list(t) for s, t in sorted(tenants.items())}}
    tmp = root / (LAYOUT_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=1))
    os.replace(tmp, root / LAYOUT_FILE)
    return ShardLayout.open(root)


def write_shards(
    tables: GraphTables,
    directory: str | os.PathLike[str],
    shards: int,
    *,
    embedder: Embedder | str | None = "default",
    overwrite: bool = False,
) -> ShardLayout:
    """Split ``tables`` by tenant into ``shards`` and write each shard (:func:`write_shard`)
    in this process, then ``layout.json`` last. :func:`graphrecall.distributed.build_indexes`
    does the same on a Ray cluster.

    Args:
        tables: The whole graph.
        directory: Where the layout goes (created).
        shards: How many shards.
        embedder: Embeds what the tables hold no vectors for (stored vectors are kept).
        overwrite: Replace stores already there.

    Returns:
        The layout written.
    """
    root = Path(directory).resolve()
    root.mkdir(parents=True, exist_ok=True)
    tenants = {
        s: write_shard(part, root, s, embedder=embedder, overwrite=overwrite)
        for s, part in split_tables(tables, shards).items()
    }
    return write_layout(root, shards, tenants)

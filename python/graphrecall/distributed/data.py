"""Bulk embedding and index building on Ray Data: the graph is split by tenant into shards,
each shard's texts become a Parquet file, an actor pool of embedders (one model loaded per
actor) embeds every shard's texts in one streaming pass, and one Ray task per shard writes
its SQLite store and saved index with the vectors stored (nothing embedded twice).

Resumable at the shard: a shard whose ``done.json`` is written is skipped by a re-run (its
texts are neither read nor embedded), so a killed build continues with the shards it had
not finished. ``layout.json`` is written once every shard is done.

The split itself runs in the calling process (the whole graph is read there once); the
embedding and the index writes run on the cluster.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..embed import Embedder, model_name, resolve_embedder
from ..errors import ParameterError
from ..tables import EmbeddingKind, EmbeddingSet, GraphTables
from .layout import ShardLayout, split_tables, write_layout, write_shard

__all__ = ["build_indexes", "embed_parquet", "shard_texts"]

DONE_FILE = "done.json"
WORK_DIR = "_work"


def _text(v: Any) -> str | None:
    if v is None or (isinstance(v, float) and v != v):
        return None
    return str(v)


def shard_texts(part: GraphTables) -> dict[str, Any]:
    """The texts the index embeds for a shard, as columns ``kind`` (``"entity"`` /
    ``"chunk"``), ``row`` (the row in that table) and ``text``: an entity's name (its id
    when it has none) and a chunk's text (empty when it has none), the texts
    :meth:`GraphIndex.build <graphrecall.index.GraphIndex.build>` embeds."""
    kinds: list[str] = []
    rows: list[int] = []
    texts: list[str] = []
    e = part.entities
    names = e.get("name")
    for i, eid in enumerate(e["id"].tolist()):
        nm = None if names is None else _text(names[i])
        kinds.append("entity")
        rows.append(i)
        texts.append(nm if nm else str(eid))
    if part.chunks is not None:
        ct = part.chunks.get("text")
        for i in range(len(part.chunks["id"])):
            kinds.append("chunk")
            rows.append(i)
            texts.append((None if ct is None else _text(ct[i])) or "")
    return {"kind": kinds, "row": rows, "text": texts}


#: An embedder, ``"default"``, or a zero-argument callable that makes one inside each actor
#: (for a model that does not pickle, e.g. ``functools.partial(E5Embedder, num_threads=1)``).
EmbedderSpec = Embedder | str | Callable[[], Embedder]


def make_embedder(spec: EmbedderSpec) -> Embedder:
    """The embedder of a spec (see :data:`EmbedderSpec`).

    Raises:
        ParameterError: No embedder.
    """
    if callable(spec) and not hasattr(spec, "embed_passages"):
        return spec()
    emb = resolve_embedder(spec)  # type: ignore[arg-type]
    if emb is None:
        raise ParameterError("invalid parameter embedder: build_indexes needs an embedder")
    return emb


class EmbedBatch:
    """A Ray Data actor: makes the embedder once, embeds batches of passages."""

    def __init__(self, embedder: EmbedderSpec) -> None:
        emb = make_embedder(embedder)
        self.emb = emb

    def __call__(self, batch: dict[str, npt.NDArray[Any]]) -> dict[str, npt.NDArray[Any]]:
        vecs = np.asarray(self.emb.embed_passages(batch["text"].tolist()), dtype=np.float32)
        return {
            "shard": batch["shard"],
            "kind": batch["kind"],
            "row": batch["row"],
            "vector": np.array([v.tobytes() for v in vecs], dtype=object),
        }


def _write_one(
    part: GraphTables,
    root: str,
    shard: int,
    vectors_dir: str,
    embedder: EmbedderSpec,
) -> list[Hashable]:
    """Attach the shard's embedded vectors to its tables, write store and saved index, then
    ``done.json``."""
    pq = importlib.import_module("pyarrow.parquet")
    layout = ShardLayout(Path(root), shard + 1, ())
    emb = make_embedder(embedder)
    model = model_name(emb)
    got = pq.read_table(Path(vectors_dir) / f"shard={shard}").to_pydict()
    sets = []
    kinds: tuple[tuple[EmbeddingKind, dict[str, Any] | None], ...] = (
        ("entity", part.entities),
        ("chunk", part.chunks),
    )
    for kind, cols in kinds:
        if cols is None:
            continue
        pick = [i for i, k in enumerate(got["kind"]) if k == kind]
        if not pick:
            continue
        rows = np.array([got["row"][i] for i in pick], dtype=np.int64)
        vecs = np.stack([np.frombuffer(got["vector"][i], dtype=np.float32) for i in pick])
        sets.append(EmbeddingSet(kind, cols["id"][rows], vecs, model))
    part.embeddings = sets
    tenants = write_shard(part, root, shard, embedder=emb, overwrite=True)
    done = layout.shard_dir(shard) / DONE_FILE
    done.write_text(json.dumps({"shard": shard, "tenants": tenants, "model": model}))
    return tenants


def _check_pool_fits(actors: int, num_cpus: float) -> None:
    """Refuse an actor pool that takes every CPU of the connected cluster: Ray Data's
    file-listing and read tasks need one CPU of their own, and would wait for it forever.

    Raises:
        ParameterError: ``actors * num_cpus`` leaves less than one CPU free.
    """
    import ray

    if not ray.is_initialized():
        return  # Ray Data starts a local cluster sized to the machine itself.
    total = float(ray.cluster_resources().get("CPU", 0.0))  # type: ignore[no-untyped-call]
    if actors * num_cpus > total - 1:
        raise ParameterError(
            f"invalid parameters actors={actors}, num_cpus={num_cpus}: the embedder pool would "
            f"hold {actors * num_cpus:g} of the cluster's {total:g} CPUs, leaving less than the "
            "one CPU Ray Data's read tasks need (the job would never start); use fewer actors "
            f"or num_cpus <= {max(total - 1, 0) / actors:g}"
        )


def embed_parquet(
    files: list[str],
    out: str | os.PathLike[str],
    *,
    embedder: EmbedderSpec = "default",
    actors: int = 2,
    batch_size: int = 64,
    num_cpus: float = 1.0,
) -> None:
    """Embed the ``text`` column of Parquet files with an actor pool on Ray Data, writing
    Parquet with the other columns kept and ``vector`` (float32 bytes) in place of
    ``text``, partitioned by ``shard``.

    Args:
        files: Parquet files with columns ``shard``, ``kind``, ``row`` and ``text``.
        out: The output directory (``shard=S/`` per shard).
        embedder: An embedder (pickled to every actor), ``"default"`` or a factory (see
            :data:`EmbedderSpec`); each actor makes or loads it once.
        actors: Actors in the pool.
        batch_size: Texts per ``embed_passages`` call.
        num_cpus: CPUs per actor (fractions welcome: a Ray resource, not a core).

    Raises:
        ParameterError: ``actors`` below 1, or a pool that leaves less than one of the
            connected cluster's CPUs free for Ray Data's read tasks.
    """
    import ray.data

    if type(actors) is not int or actors < 1:
        raise ParameterError(f"invalid parameter actors: {actors!r}; expected >= 1")
    _check_pool_fits(actors, num_cpus)
    ds = ray.data.read_parquet(files).map_batches(
        EmbedBatch,
        fn_constructor_args=(embedder,),
        batch_size=batch_size,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=num_cpus,
    )
    ds.write_parquet(str(out), partition_cols=["shard"])


def build_indexes(
    tables: GraphTables,
    directory: str | os.PathLike[str],
    shards: int,
    *,
    embedder: EmbedderSpec = "default",
    actors: int = 2,
    batch_size: int = 64,
    num_cpus: float = 1.0,
) -> ShardLayout:
    """Build the shard layout of ``tables`` on the connected Ray cluster (``ray.init``):
    texts embedded by an actor pool with Ray Data, one index-writing task per shard.

    Args:
        tables: The whole graph (e.g. :func:`graphrecall.storage.load_parquet`).
        directory: The layout's root (every node must see it at the same path).
        shards: How many shards (tenants hashed, as :func:`write_shards`).
        embedder: An embedder (pickled to every actor), ``"default"`` (each actor loads
            the offline model once) or a factory (see :data:`EmbedderSpec`).
        actors: Embedder actors in the pool.
        batch_size: Texts per embedding call.
        num_cpus: CPUs per embedder actor and per index-writing task.

    Returns:
        The layout (the same files :func:`write_shards` writes).
    """
    import ray

    if type(actors) is not int or actors < 1:
        raise ParameterError(f"invalid parameter actors: {actors!r}; expected >= 1")
    root = Path(directory).resolve()
    root.mkdir(parents=True, exist_ok=True)
    work = root / WORK_DIR
    parts = split_tables(tables, shards)
    tenants: dict[int, list[Hashable]] = {}
    todo: list[int] = []
    for s in parts:
        done = root / f"shard-{s:03d}" / DONE_FILE
        if done.is_file():
            tenants[s] = json.loads(done.read_text())["tenants"]
        else:
            todo.append(s)
    if todo:
        pa = importlib.import_module("pyarrow")
        pq = importlib.import_module("pyarrow.parquet")
        shutil.rmtree(work, ignore_errors=True)
        (work / "texts").mkdir(parents=True)
        files = []
        for s in todo:
            cols = shard_texts(parts[s])
            cols["shard"] = [s] * len(cols["row"])
            f = work / "texts" / f"shard-{s:03d}.parquet"
            # Row groups of a few batches: Ray Data splits a file into blocks by row group.
            pq.write_table(pa.table(cols), f, row_group_size=batch_size * 8)
            files.append(str(f))
        vectors = work / "vectors"
        embed_parquet(
            files,
            vectors,
            embedder=embedder,
            actors=actors,
            batch_size=batch_size,
            num_cpus=num_cpus,
        )
        write = ray.remote(num_cpus=num_cpus)(_write_one)
        refs = {s: write.remote(parts[s], str(root), s, str(vectors), embedder) for s in todo}
        for s, ref in refs.items():
            tenants[s] = ray.get(ref)
        shutil.rmtree(work, ignore_errors=True)
    return write_layout(root, shards, tenants)

"""The pieces the recipes share: hit builders (dense rows to :mod:`.hits`), the stage timer
and parameter checks (provenance paths: :mod:`.paths`)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError
from ..index import GraphIndex
from .columns import Const, HitColumns
from .hits import (
    ChunkHit,
    EntityHit,
    FactHit,
    LazyColumn,
    RetrievalResult,
    Step,
    hit_builder,
)

__all__ = [
    "ChunkHit",
    "EntityHit",
    "FactHit",
    "LazyColumn",
    "RetrievalResult",
    "Step",
    "Timer",
    "anchor_columns",
    "check_count",
    "check_queries",
    "check_real",
    "chunk_columns",
    "chunk_hits",
    "csr_ranges",
    "entity_columns",
    "entity_hits",
    "fact_columns",
    "strongest",
]

I64 = npt.NDArray[np.int64]
_perf_counter = time.perf_counter


class Timer:
    """Accumulates seconds per stage into a dict (shared by a batch's results)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        #: A read-only view of ``seconds`` (what results hold).
        self.view: Mapping[str, float] = MappingProxyType(self.seconds)

    def stage(self, name: str) -> _Stage:
        """Adds the seconds spent in the ``with`` block to stage ``name``.

        Args:
            name: The stage.

        Returns:
            The context manager timing the block (also when it raises).
        """
        return _Stage(self.seconds, name)


class _Stage:
    """:meth:`Timer.stage`'s context manager (a class: a generator-based one costs twice as
    much per block, and recipes time a handful of blocks per query)."""

    __slots__ = ("_name", "_seconds", "_t0")

    def __init__(self, seconds: dict[str, float], name: str):
        self._seconds = seconds
        self._name = name
        self._t0 = 0.0

    def __enter__(self) -> None:
        self._t0 = _perf_counter()

    def __exit__(self, *exc: object) -> None:
        seconds, name = self._seconds, self._name
        seconds[name] = seconds.get(name, 0.0) + _perf_counter() - self._t0


def check_queries(queries: str | Sequence[str]) -> tuple[list[str], bool]:
    """A batch of query strings (and whether a single str was given)."""
    if isinstance(queries, str):
        return [queries], True
    if not isinstance(queries, Sequence):
        raise ParameterError(
            f"invalid parameter queries: {type(queries).__name__} is not a str or a sequence of str"
        )
    out = list(queries)
    for i, q in enumerate(out):
        if not isinstance(q, str):
            raise ParameterError(
                f"invalid parameter queries: item {i} is {type(q).__name__}, not str"
            )
    return out, False


def check_count(name: str, value: object, lo: int = 1, hi: int = 1_000_000) -> int:
    """An int parameter within [lo, hi]."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ParameterError(
            f"invalid parameter {name}: {value!r} is not an integer in [{lo}, {hi}]"
        )
    return int(value)


def strongest(
    hops: npt.ArrayLike, strengths: npt.ArrayLike, limit: int
) -> npt.NDArray[np.intp] | None:
    """Positions of the ``limit`` nearest, then strongest, items (ties: first seen), in
    their given order; None when all fit. Bounds what a hub puts in a result."""
    h = np.asarray(hops)
    n = len(h)
    if n <= limit:
        return None
    order = np.lexsort((np.arange(n), -np.asarray(strengths, dtype=np.float64), h))[:limit]
    return np.sort(order)


def check_real(name: str, value: object, lo: float = 0.0, hi: float = math.inf) -> float:
    """A finite float parameter within [lo, hi]."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParameterError(f"invalid parameter {name}: {value!r} is not a number")
    v = float(value)
    if not math.isfinite(v) or not lo <= v <= hi:
        raise ParameterError(
            f"invalid parameter {name}: {value!r} is not a finite number in [{lo}, {hi}]"
        )
    return v


# ------------------------------------------------------------------------------ builders


def py(value: Any) -> Any:
    """A numpy scalar as the Python value (ids in results are plain ints / strs)."""
    return value.item() if isinstance(value, np.generic) else value


#: The recipes' constructors of frozen hits (see :func:`~.hits.hit_builder`).
_new_fact_hit = hit_builder(FactHit)
_new_chunk_hit = hit_builder(ChunkHit)
_new_entity_hit = hit_builder(EntityHit)

#: The null of ``GraphIndex.fact_since``.
NULL_SINCE = -(2**63)


def fact_hit(
    index: GraphIndex,
    f: int,
    *,
    score: float,
    hop: int,
    anchor: int | None,
    components: Mapping[str, float],
    path: tuple[Step, ...] = (),
) -> FactHit:
    """A :class:`FactHit` for dense fact ``f``."""
    ids = index.graph.entity_ids
    s, o = int(index.fact_subject[f]), int(index.fact_object[f])
    since = int(index.fact_since[f])
    return _new_fact_hit(
        id=py(index.graph.fact_ids[f]),
        subject=py(ids[s]),
        subject_name=index.entity_name[s],
        predicate=index.fact_predicate[f],
        object=None if o < 0 else py(ids[o]),
        object_name=None if o < 0 else index.entity_name[o],
        object_value=index.fact_value[f],
        confidence=float(index.fact_confidence[f]),
        strength=float(index.fact_strength[f]),
        description=index.fact_description[f],
        since=None if since == -(2**63) else since,
        score=score,
        hop=hop,
        anchor=None if anchor is None or anchor < 0 else py(ids[anchor]),
        components=components,
        path=path,
    )


def fact_hits(
    index: GraphIndex,
    facts: npt.NDArray[np.int64],
    *,
    scores: Sequence[float] | npt.NDArray[np.float64],
    hops: Sequence[int] | npt.NDArray[Any],
    anchors: Sequence[int] | npt.NDArray[np.int64] | None,
    components: Sequence[Mapping[str, float]] | LazyColumn[Mapping[str, float]],
    parents: Sequence[int] | npt.NDArray[np.int64] | None = None,
) -> list[FactHit]:
    """:class:`FactHit` s for many dense facts at once (:func:`fact_columns`' hits)."""
    cols = fact_columns(
        index,
        facts,
        scores=scores,
        hops=hops,
        anchors=anchors,
        components=components,
        parents=parents,
    )
    return list(cols.hits())


def fact_columns(
    index: GraphIndex,
    facts: npt.NDArray[np.int64],
    *,
    scores: Sequence[float] | npt.NDArray[np.float64],
    hops: Sequence[int] | npt.NDArray[Any],
    anchors: Sequence[int] | npt.NDArray[np.int64] | None,
    components: Sequence[Mapping[str, float]] | LazyColumn[Mapping[str, float]],
    parents: Sequence[int] | npt.NDArray[np.int64] | None = None,
) -> HitColumns:
    """The :class:`FactHit` s of many dense facts as columns (hits built on first read):
    every column is gathered with one numpy call or one list comprehension; with
    ``parents`` (each fact's parent fact, -1 for none, as seed 000's traversal records
    them) each path is its parent's path plus one step, so a query's paths cost one step
    per fact. ``anchors`` None: no fact has one. Paths and a :class:`LazyColumn` of
    components are built on first read."""
    n = len(facts)
    if n == 0:
        return HitColumns(FactHit, 0, {})
    ent_ids = index.graph.entity_ids
    facts = np.asarray(facts, dtype=np.int64)
    (
        confidence,
        strength,
        _,
        ol,
        since_raw,
        subj_ids,
        obj_ids,
        fids,
        pred_l,
        values,
        descs,
        subj_names,
        obj_names,
    ) = index.fact_table.rows(facts)
    # A literal's object is -1, an unknown time NULL_SINCE: "in" (a C scan) finds any.
    obj_id_l = (
        obj_ids
        if -1 not in ol
        else [None if o < 0 else x for o, x in zip(ol, obj_ids, strict=True)]
    )
    since = (
        since_raw
        if NULL_SINCE not in since_raw
        else [None if t == NULL_SINCE else t for t in since_raw]
    )
    anchor_l: Any = Const(None) if anchors is None else _anchor_ids(ent_ids, anchors)
    hop_l = hops if isinstance(hops, list) else np.asarray(hops, dtype=np.int64).tolist()
    path_col: Any = Const(())
    if parents is not None:
        par_l = np.asarray(parents, dtype=np.int64).tolist()

        def make_paths() -> list[tuple[Step, ...]]:
            # The steps up to (and including) each fact's subject step. A parent is always
            # collected at an earlier hop: build prefixes in hop order.
            prefix: dict[int, tuple[Step, ...]] = {}
            fl = facts.tolist()
            for i in sorted(range(n), key=hop_l.__getitem__):
                f, par = fl[i], par_l[i]
                head = prefix.get(par, ()) if par >= 0 else ()
                prefix[f] = (*head, Step(subj_ids[i], subj_names[i], pred_l[i], fids[i], "out"))
            return [
                prefix[f] + (Step(x, name),) if o >= 0 else prefix[f]
                for f, o, x, name in zip(fl, ol, obj_ids, obj_names, strict=True)
            ]

        path_col = LazyColumn(make_paths)
    return HitColumns(
        FactHit,
        n,
        {
            "id": fids,
            "subject": subj_ids,
            "subject_name": subj_names,
            "predicate": pred_l,
            "object": obj_id_l,
            "object_name": obj_names,
            "object_value": values,
            "confidence": confidence,
            "score": np.asarray(scores, dtype=np.float64).tolist(),
            "hop": hop_l,
            "anchor": anchor_l,
            "strength": strength,
            "description": descs,
            "since": since,
            "components": components,
            "path": path_col,
        },
    )


def chunk_hit(
    index: GraphIndex,
    c: int,
    *,
    score: float,
    source: str,
    components: Mapping[str, float],
    path: tuple[Step, ...] = (),
) -> ChunkHit:
    """A :class:`ChunkHit` for dense chunk ``c``."""
    return _new_chunk_hit(
        id=py(index.graph.chunk_ids[c]),
        text=index.chunk_text[c],
        score=score,
        source=source,
        components=components,
        path=path,
        tier=index.chunk_scope[c],
    )


def entity_hit(
    index: GraphIndex,
    e: int,
    *,
    score: float,
    how: str,
    hop: int = 0,
    anchor: int | None = None,
    strength: float | None = None,
    path: tuple[Step, ...] = (),
) -> EntityHit:
    """An :class:`EntityHit` for dense entity ``e``."""
    ids = index.graph.entity_ids
    return _new_entity_hit(
        id=py(ids[e]),
        name=index.entity_name[e],
        score=score,
        hop=hop,
        how=how,
        anchor=None if anchor is None or anchor < 0 else py(ids[anchor]),
        type=index.entity_type[e],
        strength=strength,
        path=path,
    )


def csr_ranges(
    offsets: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]:
    """(owner, flat): for every CSR slot of ``rows`` (in row order), its position in
    ``rows`` and its index into the CSR's value arrays."""
    starts = offsets[rows]
    lens = offsets[rows + 1] - starts
    owner = np.repeat(np.arange(len(rows)), lens)
    flat = np.arange(int(lens.sum())) + np.repeat(starts - (np.cumsum(lens) - lens), lens)
    return owner, flat


def _anchor_ids(ent_ids: npt.NDArray[Any], anchors: Any) -> list[Any]:
    """External ids of anchor entity rows (-1: no anchor, None); ``anchors`` non-empty."""
    anchor_arr = np.asarray(anchors, dtype=np.int64)
    al = anchor_arr.tolist()
    if min(al) >= 0:
        out: list[Any] = ent_ids[anchor_arr].tolist()
        return out
    ids = ent_ids[np.maximum(anchor_arr, 0)].tolist()
    return [None if a < 0 else x for a, x in zip(al, ids, strict=True)]


def entity_hits(
    index: GraphIndex,
    rows: Sequence[int] | I64,
    *,
    scores: Sequence[float] | float,
    how: Sequence[str] | str,
    hops: Sequence[int] | int = 0,
    anchors: Sequence[int] | I64 | None = None,
    strengths: Sequence[float | None] | None = None,
    paths: Sequence[tuple[Step, ...]] | LazyColumn[tuple[Step, ...]] | None = None,
) -> list[EntityHit]:
    """:class:`EntityHit` s for many dense entities at once (:func:`entity_columns`' hits:
    what :func:`entity_hit` gives one by one)."""
    cols = entity_columns(
        index,
        rows,
        scores=scores,
        how=how,
        hops=hops,
        anchors=anchors,
        strengths=strengths,
        paths=paths,
    )
    return list(cols.hits())


def entity_columns(
    index: GraphIndex,
    rows: Sequence[int] | I64,
    *,
    scores: Sequence[float] | float,
    how: Sequence[str] | str,
    hops: Sequence[int] | int = 0,
    anchors: Sequence[int] | I64 | None = None,
    strengths: Sequence[float | None] | None = None,
    paths: Sequence[tuple[Step, ...]] | LazyColumn[tuple[Step, ...]] | None = None,
) -> HitColumns:
    """The :class:`EntityHit` s of many dense entities as columns (hits built on first
    read): ids gathered with one numpy call. ``rows`` as a list or an int64 array. A
    scalar ``scores`` / ``how`` / ``hops`` applies to every row; a :class:`LazyColumn` of
    paths is built on first read."""
    n = len(rows)
    if not n:
        return HitColumns(EntityHit, 0, {})
    ent_ids = index.graph.entity_ids
    names = index.entity_name
    types = index.entity_type
    if isinstance(rows, np.ndarray):
        ids = ent_ids[rows].tolist()
        rl = rows.tolist()
    else:
        rl = rows if isinstance(rows, list) else list(rows)
        ids = ent_ids[rl].tolist()
    return HitColumns(
        EntityHit,
        n,
        {
            "id": ids,
            "name": list(map(names.__getitem__, rl)),
            "score": Const(scores) if isinstance(scores, float) else scores,
            "hop": Const(hops) if isinstance(hops, int) else hops,
            "how": Const(how) if isinstance(how, str) else how,
            "anchor": Const(None) if anchors is None else _anchor_ids(ent_ids, anchors),
            "type": list(map(types.__getitem__, rl)),
            "strength": Const(None) if strengths is None else strengths,
            "path": Const(()) if paths is None else paths,
        },
    )


def anchor_hits(index: GraphIndex, found: Sequence[tuple[int, float, str]]) -> list[EntityHit]:
    """:class:`EntityHit` s of a query's anchors given as (dense row, score, how)."""
    return list(anchor_columns(index, found).hits())


def anchor_columns(index: GraphIndex, found: Sequence[tuple[int, float, str]]) -> HitColumns:
    """The :class:`EntityHit` s of a query's anchors given as (dense row, score, how), as
    columns."""
    if not found:
        return HitColumns(EntityHit, 0, {})
    rows, scores, hows = zip(*found, strict=True)
    return entity_columns(index, list(rows), scores=scores, how=hows)


def chunk_hits(
    index: GraphIndex,
    rows: Sequence[int],
    *,
    scores: Sequence[float],
    sources: Sequence[str] | str,
    components: Sequence[Mapping[str, float]] | LazyColumn[Mapping[str, float]],
    paths: Sequence[tuple[Step, ...]] | LazyColumn[tuple[Step, ...]] | None = None,
) -> list[ChunkHit]:
    """:class:`ChunkHit` s for many dense chunks at once (:func:`chunk_columns`' hits:
    what :func:`chunk_hit` gives one by one)."""
    cols = chunk_columns(
        index, rows, scores=scores, sources=sources, components=components, paths=paths
    )
    return list(cols.hits())


def chunk_columns(
    index: GraphIndex,
    rows: Sequence[int],
    *,
    scores: Sequence[float],
    sources: Sequence[str] | str,
    components: Sequence[Mapping[str, float]] | LazyColumn[Mapping[str, float]],
    paths: Sequence[tuple[Step, ...]] | LazyColumn[tuple[Step, ...]] | None = None,
) -> HitColumns:
    """The :class:`ChunkHit` s of many dense chunks as columns (hits built on first read);
    a :class:`LazyColumn` of components or paths is built on first read."""
    n = len(rows)
    if not n:
        return HitColumns(ChunkHit, 0, {})
    text = index.chunk_text
    scope = index.chunk_scope
    rl = rows if isinstance(rows, list) else list(rows)
    return HitColumns(
        ChunkHit,
        n,
        {
            "id": index.graph.chunk_ids[rl].tolist(),
            "text": list(map(text.__getitem__, rl)),
            "score": scores,
            "source": Const(sources) if isinstance(sources, str) else sources,
            "components": components,
            "path": Const(()) if paths is None else paths,
            "tier": list(map(scope.__getitem__, rl)),
        },
    )

"""The pieces the recipes share: hit builders (dense rows to :mod:`.hits`), the stage timer,
parameter checks and provenance paths."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from itertools import repeat
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError
from ..index import GraphIndex
from .hits import (
    ChunkHit,
    Direction,
    EntityHit,
    FactHit,
    LazyColumn,
    RetrievalResult,
    Step,
    pending,
)

__all__ = [
    "ChunkHit",
    "EntityHit",
    "EntityPaths",
    "FactHit",
    "LazyColumn",
    "RetrievalResult",
    "Step",
    "Timer",
    "check_count",
    "check_queries",
    "check_real",
    "chunk_hits",
    "csr_ranges",
    "entity_hits",
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


def entity_path(
    index: GraphIndex, entity: int, parent_of: Mapping[int, int], limit: int = 64
) -> tuple[Step, ...]:
    """The path from an anchor to ``entity`` following each entity's parent fact
    (``parent_of``: dense entity -> dense fact, absent for anchors)."""
    steps: list[Step] = []
    ids = index.graph.entity_ids
    fids = index.graph.fact_ids
    e = entity
    for _ in range(limit):
        f = parent_of.get(e, -1)
        if f < 0:
            break
        s, o = int(index.fact_subject[f]), int(index.fact_object[f])
        prev = s if o == e else o
        direction: Direction = "out" if o == e else "in"
        steps.append(
            Step(
                py(ids[prev]),
                index.entity_name[prev],
                index.fact_predicate[f],
                py(fids[f]),
                direction,
            )
        )
        e = prev
    steps.reverse()
    steps.append(Step(py(ids[entity]), index.entity_name[entity]))
    return tuple(steps)


#: The null of ``GraphIndex.fact_since``.
NULL_SINCE = -(2**63)


def fact_path(index: GraphIndex, chain: Sequence[int]) -> tuple[Step, ...]:
    """Steps along a chain of dense fact indices from an anchor (each fact's subject
    first; the chain of seed 000's out-traversal)."""
    ids = index.graph.entity_ids
    fids = index.graph.fact_ids
    steps = []
    for f in chain:
        s = int(index.fact_subject[f])
        steps.append(
            Step(py(ids[s]), index.entity_name[s], index.fact_predicate[f], py(fids[f]), "out")
        )
    if chain:
        o = int(index.fact_object[chain[-1]])
        if o >= 0:
            steps.append(Step(py(ids[o]), index.entity_name[o]))
    return tuple(steps)


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
    return FactHit(
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
    """:class:`FactHit` s for many dense facts at once: every column is gathered with one
    numpy call or one list comprehension and the hits are built positionally by ``map``;
    with ``parents`` (each fact's parent fact, -1 for none, as seed 000's traversal records
    them) each path is its parent's path plus one step, so a query's paths cost one step
    per fact. ``anchors`` None: no fact has one. Paths and a :class:`LazyColumn` of
    components are built on first read."""
    n = len(facts)
    if n == 0:
        return []
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
    anchor_l: Any = repeat(None, n) if anchors is None else _anchor_ids(ent_ids, anchors)
    hop_l = hops if isinstance(hops, list) else np.asarray(hops, dtype=np.int64).tolist()
    path_col: LazyColumn[tuple[Step, ...]] | None = None
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
    comp_col = components if isinstance(components, LazyColumn) else None
    pend: Any = (
        pending(path_col, comp_col, n) if path_col is not None or comp_col is not None else None
    )
    comp_arg: Any = components if comp_col is None else pend
    return list(
        map(
            FactHit,
            fids,
            subj_ids,
            subj_names,
            pred_l,
            obj_id_l,
            obj_names,
            values,
            confidence,
            np.asarray(scores, dtype=np.float64).tolist(),
            hop_l,
            anchor_l,
            strength,
            descs,
            since,
            comp_arg,
            repeat(()) if path_col is None else pend,
        )
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
    return ChunkHit(
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
    return EntityHit(
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
    """:class:`EntityHit` s for many dense entities at once (what :func:`entity_hit` gives
    one by one): ids gathered with one numpy call, hits built positionally by ``map``.
    ``rows`` as a list or an int64 array. A scalar ``scores`` / ``how`` / ``hops`` applies
    to every row; a :class:`LazyColumn` of paths is built on first read."""
    if not len(rows):
        return []
    ent_ids = index.graph.entity_ids
    names = index.entity_name
    types = index.entity_type
    if isinstance(rows, np.ndarray):
        ids = ent_ids[rows].tolist()
        rl = rows.tolist()
    else:
        rl = rows if isinstance(rows, list) else list(rows)
        ids = ent_ids[rl].tolist()
    anchor_l: Any = repeat(None) if anchors is None else _anchor_ids(ent_ids, anchors)
    return list(
        map(
            EntityHit,
            ids,
            [names[r] for r in rl],
            repeat(scores) if isinstance(scores, float) else scores,
            repeat(hops) if isinstance(hops, int) else hops,
            repeat(how) if isinstance(how, str) else how,
            anchor_l,
            [types[r] for r in rl],
            repeat(None) if strengths is None else strengths,
            repeat(())
            if paths is None
            else pending(paths, None, len(rl))
            if isinstance(paths, LazyColumn)
            else paths,
        )
    )


def anchor_hits(index: GraphIndex, found: Sequence[tuple[int, float, str]]) -> list[EntityHit]:
    """:class:`EntityHit` s of a query's anchors given as (dense row, score, how)."""
    if not found:
        return []
    rows, scores, hows = zip(*found, strict=True)
    return entity_hits(index, list(rows), scores=scores, how=hows)


def chunk_hits(
    index: GraphIndex,
    rows: Sequence[int],
    *,
    scores: Sequence[float],
    sources: Sequence[str] | str,
    components: Sequence[Mapping[str, float]] | LazyColumn[Mapping[str, float]],
    paths: Sequence[tuple[Step, ...]] | LazyColumn[tuple[Step, ...]] | None = None,
) -> list[ChunkHit]:
    """:class:`ChunkHit` s for many dense chunks at once (what :func:`chunk_hit` gives one
    by one); a :class:`LazyColumn` of components or paths is built on first read."""
    if not len(rows):
        return []
    text = index.chunk_text
    scope = index.chunk_scope
    rl = rows if isinstance(rows, list) else list(rows)
    comp_col = components if isinstance(components, LazyColumn) else None
    path_col = paths if isinstance(paths, LazyColumn) else None
    pend: Any = (
        pending(path_col, comp_col, len(rl))
        if path_col is not None or comp_col is not None
        else None
    )
    comp_arg: Any = components if comp_col is None else pend
    path_arg: Any = repeat(()) if paths is None else paths if path_col is None else pend
    return list(
        map(
            ChunkHit,
            index.graph.chunk_ids[rl].tolist(),
            [text[c] for c in rl],
            scores,
            repeat(sources) if isinstance(sources, str) else sources,
            comp_arg,
            path_arg,
            [scope[c] for c in rl],
        )
    )


class EntityPaths:
    """Memoised :func:`entity_path` s of one query: entities reached through the same
    parent share the steps up to it, so a query's paths cost one step per entity."""

    __slots__ = ("_arrays", "_edge", "_ent_ids", "_fact_ids", "_index", "_parent_map", "_prefix")

    def __init__(self, index: GraphIndex, parent_of: Mapping[int, int]):
        self._index = index
        self._parent_map: Mapping[int, int] | None = parent_of
        #: (entities, parent facts) to build the map from on first use (see of_reached).
        self._arrays: tuple[I64, I64] | None = None
        self._ent_ids = index.graph.entity_ids
        self._fact_ids = index.graph.fact_ids
        #: Dense entity -> the steps from its anchor up to it (without its own last step).
        self._prefix: dict[int, tuple[Step, ...]] = {}
        #: Dense entity -> (the entity before it, the step from there), see :meth:`many`.
        self._edge: dict[int, tuple[int, Step]] = {}

    @classmethod
    def of_reached(cls, index: GraphIndex, entities: I64, parents: I64) -> EntityPaths:
        """The paths of a traversal's reached ``entities`` (dense) given each one's parent
        fact (-1 for an anchor); the map is built on the first path asked for.

        Args:
            index: The retrieval index.
            entities: Dense reached entities (int64).
            parents: Each one's parent fact, -1 for none (int64, same length).

        Returns:
            The (still empty) memo.
        """
        paths = cls(index, {})
        paths._parent_map = None
        paths._arrays = (entities, parents)
        return paths

    @property
    def _parents(self) -> Mapping[int, int]:
        got = self._parent_map
        if got is None and self._arrays is not None:
            ents, pars = self._arrays
            has = pars >= 0
            got = self._parent_map = dict(zip(ents[has].tolist(), pars[has].tolist(), strict=True))
            self._arrays = None
        return {} if got is None else got

    def _head(self, entity: int, depth: int) -> tuple[Step, ...] | None:
        """The steps before ``entity``'s own step, or None past 64 steps."""
        got = self._prefix.get(entity)
        if got is not None:
            return got
        f = self._parents.get(entity, -1)
        edge = self._edge.get(entity)
        if f < 0:
            head: tuple[Step, ...] = ()
        elif depth >= 64:
            return None
        elif edge is not None:
            up = self._head(edge[0], depth + 1)
            if up is None:
                return None
            head = (*up, edge[1])
        else:
            index = self._index
            s, o = int(index.fact_subject[f]), int(index.fact_object[f])
            prev = s if o == entity else o
            up = self._head(prev, depth + 1)
            if up is None:
                return None
            head = (
                *up,
                Step(
                    py(self._ent_ids[prev]),
                    index.entity_name[prev],
                    index.fact_predicate[f],
                    py(self._fact_ids[f]),
                    "out" if o == entity else "in",
                ),
            )
        self._prefix[entity] = head
        return head

    def many(self, entities: list[int]) -> list[tuple[Step, ...]]:
        """The paths of many entities: their last edges gathered with one numpy call per
        column, then each path is its parent's plus one step."""
        index = self._index
        parents = self._parents
        todo = [e for e in entities if e in parents and e not in self._edge]
        if todo:
            fl = [parents[e] for e in todo]
            f_arr = np.asarray(fl, dtype=np.int64)
            subj, obj = index.fact_subject[f_arr], index.fact_object[f_arr]
            out = obj == np.asarray(todo, dtype=np.int64)
            prev = np.where(out, subj, obj)
            prev_l = prev.tolist()
            names = index.entity_name
            preds = index.fact_predicate
            for e, f, pv, pid, fid, o in zip(
                todo,
                fl,
                prev_l,
                self._ent_ids[prev].tolist(),
                self._fact_ids[f_arr].tolist(),
                out.tolist(),
                strict=True,
            ):
                self._edge[e] = (pv, Step(pid, names[pv], preds[f], fid, "out" if o else "in"))
        names = index.entity_name
        result = []
        for e, eid in zip(entities, self._ent_ids[entities].tolist(), strict=True):
            head = self._head(e, 0)
            if head is None or len(head) > 64:
                result.append(entity_path(index, e, parents))
            else:
                result.append((*head, Step(eid, names[e])))
        return result

    def __call__(self, entity: int) -> tuple[Step, ...]:
        """The path from an anchor to dense ``entity`` (as :func:`entity_path`)."""
        head = self._head(entity, 0)
        if head is None or len(head) > 64:  # longer than entity_path's limit: its truncation
            return entity_path(self._index, entity, self._parents)
        return (*head, Step(py(self._ent_ids[entity]), self._index.entity_name[entity]))

"""The result family of the native kernels: flat numpy arrays cut into queries by offsets.

Every batch result (:class:`Activation`, :class:`Recall`, :class:`PageRank` here;
:class:`~graphrecall.fusion.Fused`, :class:`~graphrecall.fusion.Merged` and
:class:`~graphrecall.scoring.Reranked` beside their kernels) follows one convention:

* ``offsets`` are int64 of length ``n_queries + 1``: query ``q`` owns
  ``[offsets[q], offsets[q + 1])`` of each flat array;
* ``len(result)`` is the number of queries, ``result[q]`` (negative ``q`` counts from the
  end) the single form of query ``q`` (numpy slices, no copies), and a bad ``q`` raises
  ``IndexError`` naming the batch size;
* ``to_list()`` (per query, ``(id, score)`` pairs), ``to_records()`` (one dict per item,
  with its query and rank), ``to_pandas()`` and ``to_arrow()`` convert on request; pandas
  and pyarrow are imported only there.

Arrays are fetched from the native result on first access and cached. Ids are the graph's
external ids (dense indices when the graph was built without ids); ``-1`` (or ``None`` for
string ids) marks "no parent" / "no anchor".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt

from . import _core
from .arrays import as_offsets, check_query
from .errors import ParameterError

if TYPE_CHECKING:
    import pandas as pd

    from .graph import KnowledgeGraph

__all__ = [
    "Activation",
    "BatchForm",
    "PageRank",
    "QueryActivation",
    "QueryPageRank",
    "QueryRecall",
    "Recall",
]

_Array = npt.NDArray[Any]
_T = TypeVar("_T")


class cached_property(Generic[_T]):
    """Compute once, then serve from the instance dict (a non-data descriptor).

    ``functools.cached_property`` takes a lock on every first access on Python 3.11, which
    costs about a microsecond: as much as the native query it wraps.
    """

    def __init__(self, func: Callable[[Any], _T]):
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> cached_property[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> _T | cached_property[_T]:
        if obj is None:
            return self
        value = self.func(obj)
        obj.__dict__[self.name] = value
        return value


class BatchForm:
    """What every batch result of the family shares: the query count, iteration over the
    single forms, and the conversions built on ``to_records``."""

    def __len__(self) -> int:
        """Number of queries."""
        raise NotImplementedError

    def __getitem__(self, q: int) -> Any:
        raise NotImplementedError

    @property
    def n_queries(self) -> int:
        """Number of queries in the batch."""
        return len(self)

    def __iter__(self) -> Iterator[Any]:
        return (self[q] for q in range(len(self)))

    def to_list(self) -> list[Any]:
        """Per query, its ``to_list()``."""
        return [one.to_list() for one in self]

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per item of every query (with ``query`` and ``rank``)."""
        return [r for q in range(len(self)) for r in self._records(q)]

    def _records(self, q: int) -> list[dict[str, Any]]:
        one: Any = self[q]
        out: list[dict[str, Any]] = one.to_records()
        return out

    def to_pandas(self) -> pd.DataFrame:
        """:meth:`to_records` as a pandas DataFrame (imports pandas)."""
        import pandas as pd

        return pd.DataFrame.from_records(self.to_records())

    def to_arrow(self) -> Any:
        """:meth:`to_records` as a ``pyarrow.Table`` (imports pyarrow, which has no types)."""
        import pyarrow as pa  # type: ignore[import-untyped]

        return pa.Table.from_pylist(self.to_records())


class SingleForm:
    """What every single-query form of the family shares: the conversions built on
    ``to_records``."""

    def to_records(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def to_pandas(self) -> pd.DataFrame:
        """:meth:`to_records` as a pandas DataFrame (imports pandas)."""
        import pandas as pd

        return pd.DataFrame.from_records(self.to_records())

    def to_arrow(self) -> Any:
        """:meth:`to_records` as a ``pyarrow.Table`` (imports pyarrow, which has no types)."""
        import pyarrow as pa

        return pa.Table.from_pylist(self.to_records())


class Activation(BatchForm):
    """Facts and entities reached by spreading activation, for a batch of queries.

    Attributes (all numpy arrays, concatenated over queries; ``fact_offsets[q]`` ..
    ``fact_offsets[q+1]`` are query ``q``'s facts, likewise ``entity_offsets``):
        fact_ids: Reached facts, in BFS order or ranked (int64 or object).
        hops: Hop each fact was collected at (0 = a fact of an anchor), uint32.
        anchors: Anchor entity each fact's path starts from.
        parents: Fact through which the expanded entity was reached (-1 at hop 0).
        via: Entity the fact was walked from.
        scores: Ranking scores (float64) or ``None`` when unranked.
        entity_ids, entity_hops, entity_strengths, entity_anchors, entity_parents:
            Reached entities (anchors at hop 0), their distance, strongest incoming
            relation strength at that distance, originating anchor and reaching fact.
    """

    def __init__(self, core: _core.CoreActivation, graph: KnowledgeGraph):
        self._core = core
        self._graph = graph

    @property
    def core(self) -> _core.CoreActivation:
        """The native result (dense indices, no id mapping) for recipes reading its arrays."""
        return self._core

    def __len__(self) -> int:
        return int(self._core.n_queries)

    def __getitem__(self, q: int) -> QueryActivation:
        return QueryActivation(self, check_query(q, len(self)))

    def __iter__(self) -> Iterator[QueryActivation]:
        return (self[q] for q in range(len(self)))

    @cached_property
    def fact_offsets(self) -> npt.NDArray[np.int64]:
        return self._core.fact_offsets

    @cached_property
    def entity_offsets(self) -> npt.NDArray[np.int64]:
        return self._core.entity_offsets

    @cached_property
    def fact_indices(self) -> npt.NDArray[np.int64]:
        """Dense fact indices (what the core uses)."""
        return self._core.facts

    @cached_property
    def fact_ids(self) -> _Array:
        return self._graph.fact_map.to_external(self._core.facts)

    @cached_property
    def hops(self) -> npt.NDArray[np.uint32]:
        return self._core.hops

    @cached_property
    def anchors(self) -> _Array:
        return self._graph.entity_map.to_external(self._core.anchors)

    @cached_property
    def parent_indices(self) -> npt.NDArray[np.int64]:
        """Dense index of each fact's parent fact (-1 at hop 0)."""
        return self._core.parents

    @cached_property
    def parents(self) -> _Array:
        return self._graph.fact_map.to_external(self.parent_indices)

    @cached_property
    def via(self) -> _Array:
        return self._graph.entity_map.to_external(self._core.via)

    @cached_property
    def scores(self) -> npt.NDArray[np.float64] | None:
        return self._core.scores

    @cached_property
    def entity_ids(self) -> _Array:
        return self._graph.entity_map.to_external(self._core.entities)

    @cached_property
    def entity_hops(self) -> npt.NDArray[np.uint32]:
        return self._core.entity_hops

    @cached_property
    def entity_strengths(self) -> npt.NDArray[np.float32]:
        return self._core.entity_strengths

    @cached_property
    def entity_anchors(self) -> _Array:
        return self._graph.entity_map.to_external(self._core.entity_anchors)

    @cached_property
    def entity_parents(self) -> _Array:
        return self._graph.fact_map.to_external(self._core.entity_parents)

    def __repr__(self) -> str:
        return f"Activation(queries={self.n_queries}, facts={len(self.fact_indices)})"


class QueryActivation(SingleForm):
    """One query's view of an :class:`Activation` (numpy slices, no copies)."""

    def __init__(self, batch: Activation, q: int):
        self._b = batch
        self.query = q
        fo = batch.fact_offsets
        eo = batch.entity_offsets
        self._f = slice(int(fo[q]), int(fo[q + 1]))
        self._e = slice(int(eo[q]), int(eo[q + 1]))

    def __len__(self) -> int:
        return self._f.stop - self._f.start

    @property
    def fact_ids(self) -> _Array:
        return self._b.fact_ids[self._f]

    @property
    def fact_indices(self) -> npt.NDArray[np.int64]:
        return self._b.fact_indices[self._f]

    @property
    def hops(self) -> npt.NDArray[np.uint32]:
        return self._b.hops[self._f]

    @property
    def anchors(self) -> _Array:
        return self._b.anchors[self._f]

    @property
    def parents(self) -> _Array:
        return self._b.parents[self._f]

    @property
    def via(self) -> _Array:
        return self._b.via[self._f]

    @property
    def scores(self) -> npt.NDArray[np.float64] | None:
        s = self._b.scores
        return None if s is None else s[self._f]

    @property
    def entity_ids(self) -> _Array:
        return self._b.entity_ids[self._e]

    @property
    def entity_hops(self) -> npt.NDArray[np.uint32]:
        return self._b.entity_hops[self._e]

    @property
    def entity_strengths(self) -> npt.NDArray[np.float32]:
        return self._b.entity_strengths[self._e]

    @property
    def entity_anchors(self) -> _Array:
        return self._b.entity_anchors[self._e]

    @property
    def entity_parents(self) -> _Array:
        return self._b.entity_parents[self._e]

    def to_list(self) -> list[tuple[Any, float | None]]:
        """``(fact id, score)`` per reached fact (score None when unranked)."""
        ids = self.fact_ids.tolist()
        s = self.scores
        return list(zip(ids, [None] * len(ids) if s is None else s.tolist(), strict=True))

    def path(self, i: int) -> list[Any]:
        """Fact ids from the anchor to the ``i``-th reached fact (inclusive), in order."""
        n = len(self)
        i = check_query(i, n)
        # Walk dense indices (an external fact id may itself be -1).
        idx = self._b.fact_indices[self._f].tolist()
        parents = self._b.parent_indices[self._f].tolist()
        ids = self.fact_ids.tolist()
        position = {f: k for k, f in enumerate(idx)}
        chain = [ids[i]]
        k = i
        while parents[k] >= 0:
            k = position[parents[k]]
            chain.append(ids[k])
        return chain[::-1]

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per reached fact, in result order."""
        scores = self.scores
        has_parent = (self._b.parent_indices[self._f] >= 0).tolist()
        out = []
        for k, (f, h, a, p, v, hp) in enumerate(
            zip(
                self.fact_ids.tolist(),
                self.hops.tolist(),
                self.anchors.tolist(),
                self.parents.tolist(),
                self.via.tolist(),
                has_parent,
                strict=True,
            )
        ):
            out.append(
                {
                    "query": self.query,
                    "rank": k,
                    "fact": f,
                    "hop": h,
                    "anchor": a,
                    "parent": p if hp else None,
                    "via": v,
                    "score": None if scores is None else float(scores[k]),
                }
            )
        return out

    def entity_records(self) -> list[dict[str, Any]]:
        """One dict per reached entity."""
        has_parent = (self._b.core.entity_parents[self._e] >= 0).tolist()
        return [
            {
                "query": self.query,
                "entity": e,
                "hop": h,
                "strength": float(s),
                "anchor": a,
                "parent": p if hp else None,
            }
            for e, h, s, a, p, hp in zip(
                self.entity_ids.tolist(),
                self.entity_hops.tolist(),
                self.entity_strengths.tolist(),
                self.entity_anchors.tolist(),
                self.entity_parents.tolist(),
                has_parent,
                strict=True,
            )
        ]

    def __repr__(self) -> str:
        return f"QueryActivation(query={self.query}, facts={len(self)})"


class Recall(BatchForm):
    """Seed-004 graph recall: the top edges per query by composite score.

    Attributes: ``fact_ids``, ``scores`` (composite), ``hops`` (distance of the endpoint
    the edge was scored from), ``anchors``, ``via``, ``offsets`` (per query).
    """

    def __init__(self, core: _core.CoreRecall, graph: KnowledgeGraph):
        self._core = core
        self._graph = graph

    @property
    def core(self) -> _core.CoreRecall:
        """The native result (dense indices, no id mapping) for recipes reading its arrays."""
        return self._core

    def __len__(self) -> int:
        return int(self._core.n_queries)

    def __getitem__(self, q: int) -> QueryRecall:
        return QueryRecall(self, check_query(q, len(self)))

    def __iter__(self) -> Iterator[QueryRecall]:
        return (self[q] for q in range(len(self)))

    @cached_property
    def offsets(self) -> npt.NDArray[np.int64]:
        return self._core.offsets

    # Same name as Activation's, so code can treat both alike.
    @property
    def fact_offsets(self) -> npt.NDArray[np.int64]:
        return self.offsets

    @cached_property
    def fact_indices(self) -> npt.NDArray[np.int64]:
        return self._core.facts

    @cached_property
    def fact_ids(self) -> _Array:
        return self._graph.fact_map.to_external(self._core.facts)

    @cached_property
    def scores(self) -> npt.NDArray[np.float64]:
        return self._core.scores

    @cached_property
    def hops(self) -> npt.NDArray[np.uint32]:
        return self._core.hops

    @cached_property
    def anchors(self) -> _Array:
        return self._graph.entity_map.to_external(self._core.anchors)

    @cached_property
    def via(self) -> _Array:
        return self._graph.entity_map.to_external(self._core.via)

    def __repr__(self) -> str:
        return f"Recall(queries={self.n_queries}, facts={len(self.fact_indices)})"


class QueryRecall(SingleForm):
    """One query's view of a :class:`Recall`."""

    def __init__(self, batch: Recall, q: int):
        self._b = batch
        self.query = q
        o = batch.offsets
        self._s = slice(int(o[q]), int(o[q + 1]))

    def __len__(self) -> int:
        return self._s.stop - self._s.start

    @property
    def fact_ids(self) -> _Array:
        return self._b.fact_ids[self._s]

    @property
    def scores(self) -> npt.NDArray[np.float64]:
        return self._b.scores[self._s]

    @property
    def hops(self) -> npt.NDArray[np.uint32]:
        return self._b.hops[self._s]

    @property
    def anchors(self) -> _Array:
        return self._b.anchors[self._s]

    @property
    def via(self) -> _Array:
        return self._b.via[self._s]

    def to_list(self) -> list[tuple[Any, float]]:
        """``(fact id, composite score)`` per recalled edge."""
        return list(zip(self.fact_ids.tolist(), self.scores.tolist(), strict=True))

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per recalled edge, in rank order."""
        return [
            {"query": self.query, "rank": k, "fact": f, "score": s, "hop": h, "anchor": a, "via": v}
            for k, (f, s, h, a, v) in enumerate(
                zip(
                    self.fact_ids.tolist(),
                    self.scores.tolist(),
                    self.hops.tolist(),
                    self.anchors.tolist(),
                    self.via.tolist(),
                    strict=True,
                )
            )
        ]


class PageRank(BatchForm):
    """Personalized PageRank scores per query: entities and, through mentions, chunks
    (``entity_offsets`` / ``chunk_offsets`` cut the entity and chunk arrays)."""

    def __init__(self, arrays: tuple[_Array, ...], graph: KnowledgeGraph):
        eo, ents, escores, co, chunks, cscores, iters = arrays
        #: Dense indices of the scored entities / chunks (what recipes compute with).
        self.entity_indices: npt.NDArray[np.int64] = ents
        self.chunk_indices: npt.NDArray[np.int64] = chunks
        self.entity_offsets: npt.NDArray[np.int64] = as_offsets(eo)
        self.entity_ids: _Array = graph.entity_map.to_external(ents)
        self.entity_scores: npt.NDArray[np.float64] = escores
        self.chunk_offsets: npt.NDArray[np.int64] = as_offsets(co)
        self.chunk_ids: _Array = graph.chunk_map.to_external(chunks)
        self.chunk_scores: npt.NDArray[np.float64] = cscores
        self.iterations: npt.NDArray[np.uint32] = iters

    def __len__(self) -> int:
        return len(self.iterations)

    def __getitem__(self, q: int) -> QueryPageRank:
        return QueryPageRank(self, check_query(q, len(self)))

    def __iter__(self) -> Iterator[QueryPageRank]:
        return (self[q] for q in range(len(self)))

    def __repr__(self) -> str:
        return f"PageRank(queries={self.n_queries}, entities={len(self.entity_scores)})"


class QueryPageRank(SingleForm):
    """One query's view of a :class:`PageRank`."""

    def __init__(self, batch: PageRank, q: int):
        self.query = q
        e = slice(int(batch.entity_offsets[q]), int(batch.entity_offsets[q + 1]))
        c = slice(int(batch.chunk_offsets[q]), int(batch.chunk_offsets[q + 1]))
        self.entity_ids = batch.entity_ids[e]
        self.entity_scores = batch.entity_scores[e]
        self.chunk_ids = batch.chunk_ids[c]
        self.chunk_scores = batch.chunk_scores[c]
        self.iterations = int(batch.iterations[q])

    def __len__(self) -> int:
        return len(self.entity_ids)

    def to_list(self) -> list[tuple[Any, float]]:
        """``(entity id, score)`` per scored entity, best first."""
        return list(zip(self.entity_ids.tolist(), self.entity_scores.tolist(), strict=True))

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per scored entity, then one per scored chunk (``kind`` tells which)."""
        q = self.query
        return [
            {"query": q, "kind": "entity", "rank": k, "id": i, "score": s}
            for k, (i, s) in enumerate(self.to_list())
        ] + [
            {"query": q, "kind": "chunk", "rank": k, "id": i, "score": s}
            for k, (i, s) in enumerate(
                zip(self.chunk_ids.tolist(), self.chunk_scores.tolist(), strict=True)
            )
        ]

    def __repr__(self) -> str:
        return f"QueryPageRank(query={self.query}, entities={len(self)})"


def check_positive(name: str, value: object) -> None:
    """Raise ParameterError unless value is a positive int."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ParameterError(f"invalid parameter {name}: {value!r} is not a positive integer")

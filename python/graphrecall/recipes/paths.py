"""Provenance paths of reached entities: the steps from an anchor to each entity, following
the fact that reached it."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from ..index import GraphIndex
from .base import py
from .hits import Direction, Step

__all__ = ["EntityPaths", "entity_path"]

I64 = npt.NDArray[np.int64]


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

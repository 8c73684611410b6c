"""Prepared queries: a validated configuration called once per batch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .. import _core
from ..results import Activation, Recall
from ..tables.faults import parameter_error
from .params import _time_param, anchor_batch

if TYPE_CHECKING:
    from .knowledge import KnowledgeGraph

__all__ = ["BATCH_SLICE", "RecallPlan", "SpreadPlan"]

#: Queries per native call: a larger batch runs slice by slice and the slices' arrays are
#: joined in numpy, so the core's per-call allocations stay bounded (a batch too big for
#: memory is then a ``MemoryError`` from numpy, never an abort in the core).
BATCH_SLICE = 8192

#: The offset columns of each native result and the columns they index.
_SPREAD_GROUPS: dict[str, tuple[str, ...]] = {
    "fact_offsets": ("facts", "hops", "anchors", "parents", "via", "scores"),
    "entity_offsets": (
        "entities",
        "entity_hops",
        "entity_strengths",
        "entity_anchors",
        "entity_parents",
    ),
}
_RECALL_GROUPS: dict[str, tuple[str, ...]] = {
    "offsets": ("facts", "scores", "hops", "anchors", "via")
}


class _Joined:
    """Native results of consecutive query slices as one: each column concatenated, each
    offsets column shifted (the columns hold graph indices, not positions)."""

    def __init__(self, parts: list[Any], groups: dict[str, tuple[str, ...]]):
        self.n_queries = sum(int(p.n_queries) for p in parts)
        for offsets, columns in groups.items():
            offs = [np.asarray(getattr(p, offsets)) for p in parts]
            starts = np.cumsum([0] + [int(o[-1]) for o in offs[:-1]])
            setattr(
                self,
                offsets,
                np.concatenate(
                    [offs[0][:1]] + [o[1:] + s for o, s in zip(offs, starts, strict=True)]
                ),
            )
            for col in columns:
                vals = [getattr(p, col) for p in parts]
                setattr(self, col, None if vals[0] is None else np.concatenate(vals))


def _in_slices(
    call: Any,
    idx: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64] | None,
    offsets: npt.NDArray[np.int64] | None,
    groups: dict[str, tuple[str, ...]],
    *rest: Any,
) -> Any:
    """``call(idx, scores, offsets, *rest)``, slice by slice of :data:`BATCH_SLICE` queries
    when the batch is larger."""
    n = 1 if offsets is None else len(offsets) - 1
    if n <= BATCH_SLICE:
        return call(idx, scores, offsets, *rest)
    assert offsets is not None
    parts = []
    for a in range(0, n, BATCH_SLICE):
        b = min(a + BATCH_SLICE, n)
        lo, hi = int(offsets[a]), int(offsets[b])
        parts.append(
            call(
                idx[lo:hi],
                None if scores is None else scores[lo:hi],
                offsets[a : b + 1] - lo,
                *rest,
            )
        )
    return _Joined(parts, groups)


class SpreadPlan:
    """A validated spreading-activation configuration; call it per batch.

    ``plan(anchors, anchor_scores=None, now=None) -> Activation``. Building the plan once
    keeps per-query overhead to one FFI call (the prepared-statement pattern).
    """

    __slots__ = ("_core", "_graph", "_identity", "_needs_now")

    def __init__(self, graph: KnowledgeGraph, core: _core.CoreSpreadPlan, *, needs_now: bool):
        self._graph = graph
        self._core = core
        self._needs_now = needs_now
        self._identity = graph.entity_map.kind == "identity"

    def __call__(self, anchors: Any, anchor_scores: Any = None, *, now: Any = None) -> Activation:
        if (
            self._identity
            and type(anchors) is np.ndarray
            and anchors.ndim == 1
            and anchors.dtype == np.int64
            and anchor_scores is None
        ):
            idx, sc, off = anchors, None, None  # the fast path: no conversion at all
        else:
            idx, sc, off = anchor_batch(self._graph.entity_map, anchors, anchor_scores)
        if now is None:
            t = None
        elif type(now) is int and -(2**63) < now < 2**63:
            t = now  # the fast path
        else:
            t = _time_param("now", now)
        if self._needs_now and t is None:
            raise parameter_error("now", "is required to rank by score_fact")
        return Activation(_in_slices(self._core, idx, sc, off, _SPREAD_GROUPS, t), self._graph)

    def dense(
        self,
        anchors: npt.NDArray[np.int64],
        offsets: npt.NDArray[np.int64] | None = None,
        *,
        now: Any = None,
    ) -> Activation:
        """The plan on anchors given as dense entity indices (what the recipes hold): no
        id lookups on the way in.

        Args:
            anchors: Dense entity indices, int64, all queries concatenated.
            offsets: Per-query bounds into ``anchors`` (int64, n + 1); None: one query.
            now: As for calling the plan.
        """
        if now is None:
            t = None
        elif type(now) is int and -(2**63) < now < 2**63:
            t = now
        else:
            t = _time_param("now", now)
        if self._needs_now and t is None:
            raise parameter_error("now", "is required to rank by score_fact")
        core = _in_slices(self._core, anchors, None, offsets, _SPREAD_GROUPS, t)
        return Activation(core, self._graph)


class RecallPlan:
    """A validated seed-004 recall configuration; ``plan(anchors, match_scores)``."""

    __slots__ = ("_core", "_graph", "_identity")

    def __init__(self, graph: KnowledgeGraph, core: _core.CoreRecallPlan):
        self._graph = graph
        self._core = core
        self._identity = graph.entity_map.kind == "identity"

    def __call__(self, anchors: Any, match_scores: Any = None) -> Recall:
        if (
            self._identity
            and type(anchors) is np.ndarray
            and anchors.ndim == 1
            and anchors.dtype == np.int64
            and (
                match_scores is None
                or (
                    type(match_scores) is np.ndarray
                    and match_scores.dtype == np.float64
                    and match_scores.shape == anchors.shape
                )
            )
        ):
            # The fast path: one query given as arrays already in the core's dtypes.
            return Recall(self._core(anchors, match_scores, None), self._graph)
        idx, sc, off = anchor_batch(self._graph.entity_map, anchors, match_scores)
        return Recall(_in_slices(self._core, idx, sc, off, _RECALL_GROUPS), self._graph)

    def dense(
        self,
        anchors: npt.NDArray[np.int64],
        match_scores: npt.NDArray[np.float64],
        offsets: npt.NDArray[np.int64] | None = None,
    ) -> Recall:
        """The plan on anchors given as dense entity indices (int64) with their match
        scores (float64) and per-query ``offsets`` (int64, n + 1; None: one query): no id
        lookups on the way in."""
        core = _in_slices(self._core, anchors, match_scores, offsets, _RECALL_GROUPS)
        return Recall(core, self._graph)

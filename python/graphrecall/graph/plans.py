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

__all__ = ["RecallPlan", "SpreadPlan"]


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
        return Activation(self._core(idx, sc, off, t), self._graph)

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
        return Activation(self._core(anchors, None, offsets, t), self._graph)


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
        return Recall(self._core(idx, sc, off), self._graph)

    def dense(
        self,
        anchors: npt.NDArray[np.int64],
        match_scores: npt.NDArray[np.float64],
        offsets: npt.NDArray[np.int64] | None = None,
    ) -> Recall:
        """The plan on anchors given as dense entity indices (int64) with their match
        scores (float64) and per-query ``offsets`` (int64, n + 1; None: one query): no id
        lookups on the way in."""
        return Recall(self._core(anchors, match_scores, offsets), self._graph)

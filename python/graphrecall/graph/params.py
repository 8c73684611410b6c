"""Checks of query parameters, and the anchors of one query or a batch as dense indices."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from ..tables.columns import ints, time_value
from ..tables.faults import parameter_error
from ..tables.ids import IdMap

if TYPE_CHECKING:
    from .knowledge import KnowledgeGraph

__all__ = ["freeze"]


Direction = Literal["out", "in", "both"]
_U32_MAX = 2**32 - 1


def _int_param(name: str, value: object, lo: int, hi: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise parameter_error(name, f"{value!r} is not an integer", input=value)
    v = int(value)
    if not lo <= v <= hi:
        raise parameter_error(name, f"{v} is not in [{lo}, {hi}]", input=v)
    return v


def _opt_int(name: str, value: object, lo: int, hi: int) -> int | None:
    return None if value is None else _int_param(name, value, lo, hi)


def _opt_float(name: str, value: object) -> float | None:
    return None if value is None else _float_param(name, value)


def _float_param(name: str, value: object) -> float:
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
        raise parameter_error(name, f"{value!r} is not a number", input=value)
    v = float(value)
    if v != v:
        raise parameter_error(name, "is NaN")
    return v


def _time_param(name: str, value: object) -> int:
    """A query-time timestamp (int seconds, float seconds, datetime, datetime64)."""
    if value is None or (isinstance(value, float) and value != value):
        raise parameter_error(name, f"{value!r} is not a time", input=value)
    if isinstance(value, np.datetime64) and np.isnat(value):
        raise parameter_error(name, "NaT is not a time")
    try:
        t = time_value(value, "query", name, 0)
    except DataError:
        raise parameter_error(name, f"{value!r} is not a time", input=value) from None
    if t == -(2**63):
        raise parameter_error(name, f"{value!r} is not a time", input=value)
    return t


def _bool_param(name: str, value: object) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise parameter_error(name, f"{value!r} is not a bool", input=value)
    return bool(value)


def _direction(value: object) -> str:
    if value not in ("out", "in", "both"):
        raise parameter_error(
            "direction", f"{value!r} is not one of 'out', 'in', 'both'", input=value
        )
    return str(value)


def freeze(v: Any) -> Any:
    """A hashable stand-in for a parameter value (lists and sets of names become tuples;
    the type is part of the key so that 1 and True, or "1" and 1, never share a plan)."""
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(freeze(x) for x in v))
    if isinstance(v, (set, frozenset)):
        return ("set", tuple(sorted(map(repr, v))))
    return (type(v).__name__, v)


def _distances(values: list[Any]) -> npt.NDArray[np.uint32]:
    try:
        d = ints(np.asarray(values), np.int64, "related", "distance")
    except DataError as exc:
        raise parameter_error("related_distance", str(exc)) from None
    bad = (d < 1) | (d > 2**32 - 2)
    if bad.any():
        i = int(np.argmax(bad))
        raise parameter_error(
            "related_distance",
            f"value at position {i} is {d[i]}; related entities are at distance >= 1",
        )
    return d.astype(np.uint32)


def anchor_batch(
    entities: IdMap, anchors: Any, scores: Any, name: str = "anchors"
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64] | None, npt.NDArray[np.int64] | None]:
    """Flatten one query (1-D), a rectangular batch (2-D) or a ragged batch (list of
    sequences) into anchors + offsets, mapping external ids."""
    if isinstance(anchors, np.ndarray) and anchors.ndim == 2:
        q, a = anchors.shape
        flat = anchors.reshape(-1)
        offsets: npt.NDArray[np.int64] | None = (
            np.arange(0, q * a + 1, max(a, 1), dtype=np.int64)
            if a
            else np.zeros(q + 1, dtype=np.int64)
        )
        sc = None if scores is None else np.asarray(scores, dtype=np.float64)
        if sc is not None and sc.ndim == 1 and a == len(sc):
            sc = np.tile(sc, q)
        elif sc is not None:
            sc = sc.reshape(-1)
    elif (
        isinstance(anchors, (list, tuple))
        and anchors
        and all(isinstance(x, (list, tuple, np.ndarray)) for x in anchors)
    ):
        lens = [len(x) for x in anchors]
        offsets = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        flat = (
            np.concatenate([np.asarray(x).reshape(-1) for x in anchors])
            if sum(lens)
            else np.zeros(0, np.int64)
        )
        if scores is None:
            sc = None
        else:
            sc = (
                np.concatenate([np.asarray(s, dtype=np.float64).reshape(-1) for s in scores])
                if len(scores)
                else np.zeros(0)
            )
    else:
        flat = np.asarray(anchors)
        if flat.ndim == 0:
            flat = flat.reshape(1)
        offsets = None
        sc = None if scores is None else np.asarray(scores, dtype=np.float64).reshape(-1)
    if entities.kind == "identity" and flat.dtype == np.int64:
        idx = np.ascontiguousarray(flat)
    else:
        idx = entities.lookup(flat.tolist(), name)
    if sc is not None and len(sc) != len(idx):
        raise parameter_error(f"{name[:-1]}_scores", f"{len(sc)} scores for {len(idx)} anchors")
    return idx, None if sc is None else np.ascontiguousarray(sc), offsets


def filters(
    graph: KnowledgeGraph,
    statuses: Iterable[Hashable] | None,
    predicates: Iterable[Hashable] | None,
    min_confidence: float | None,
    as_of: Any,
    max_sequence: int | None,
    tenant: Hashable | None,
) -> dict[str, Any]:
    """The core's filter arguments (codes, checked numbers) of the query filters."""
    st = None
    if statuses is not None:
        try:
            st = np.array([graph.statuses.code(s) for s in statuses], dtype=np.uint8)
        except DataError as exc:
            raise parameter_error("statuses", str(exc)) from None
    pr = None
    if predicates is not None:
        try:
            pr = np.array([graph.predicates.code(p) for p in predicates], dtype=np.uint32)
        except DataError as exc:
            raise parameter_error("predicates", str(exc)) from None
    return {
        "statuses": st,
        "predicates": pr,
        "min_confidence": _opt_float("min_confidence", min_confidence),
        "as_of": None if as_of is None else _time_param("as_of", as_of),
        "max_sequence": _opt_int("max_sequence", max_sequence, -(2**63) + 1, 2**63 - 1),
        "tenant": None if tenant is None else graph.tenant_code(tenant),
    }

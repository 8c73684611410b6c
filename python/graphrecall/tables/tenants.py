"""Tenants: the rules of ``entities.tenant`` / ``chunks.tenant`` and the codes the graph
build gives them."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from .columns import ObjectColumn, describe, description
from .work import _MAX_TENANT, Array, Mask, _is_null, _py, _Work


def _tenant_values(w: _Work) -> tuple[Array, Mask, Mask]:
    """(values as int / str objects, is-int mask, unusable mask) of a tenant column."""
    arr = w.cols["tenant"]
    n = w.n
    out = np.empty(n, dtype=object)
    is_int = np.zeros(n, dtype=bool)
    badm = np.zeros(n, dtype=bool)
    null = np.zeros(n, dtype=bool)
    if arr.dtype.kind in "iu":
        big = arr.astype(np.int64) if arr.dtype.itemsize < 8 or arr.dtype.kind == "i" else arr
        badm = (big < 0) | (big > _MAX_TENANT)
        out[:] = arr.tolist()
        is_int[:] = True
        if big.dtype == np.int64:  # described by its ints: no object is looked at again
            out = describe(
                out, ObjectColumn(frozenset({int}), ints=big, null=np.zeros(n, dtype=bool))
            )
    else:
        for i, v in enumerate(arr.tolist()):
            v = _py(v)
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if _is_null(v):
                null[i] = True
            elif isinstance(v, str):
                out[i] = v
            elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _MAX_TENANT:
                out[i] = v
                is_int[i] = True
            else:
                badm[i] = True
    w.bad(
        badm,
        lambda i: f"tenant = {_py(arr[i])!r} is not a tenant (a str or an int in [0, 2**24))",
        column="tenant",
        value=lambda i: arr[i],
    )
    w.bad(null, lambda i: "tenant is missing", column="tenant", kind="missing")
    return out, is_int, badm | null


def _check_tenants(en: _Work, ch: _Work) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Tenant codes of entities and chunks (-1 where unusable), for comparisons."""
    given = [w for w in (en, ch) if "tenant" in w.cols]
    if not given:
        return np.zeros(en.n, dtype=np.int64), np.zeros(ch.n, dtype=np.int64)
    parts = {id(w): _tenant_values(w) for w in given}
    # One kind of tenant for the graph: that of the first usable value.
    kind_int: bool | None = None
    for w in given:
        vals, is_int, unusable = parts[id(w)]
        ok = np.flatnonzero(~unusable)
        if len(ok):
            kind_int = bool(is_int[ok[0]])
            break
    codes: dict[int, npt.NDArray[np.int64]] = {}
    if kind_int is None:
        for w in given:
            codes[id(w)] = np.full(w.n, -1, dtype=np.int64)
            w.out["tenant"] = parts[id(w)][0]
    else:
        first_kind = "an int" if kind_int else "a str"
        for w in given:
            vals, is_int, unusable = parts[id(w)]
            wrong = ~unusable & (is_int != kind_int)

            def why(i: int, vals: Array = vals) -> str:
                return f"tenant = {vals[i]!r} is not {first_kind}, as the graph's other tenants are"

            w.bad(wrong, why, column="tenant", value=vals.__getitem__)
            parts[id(w)] = (vals, is_int, unusable | wrong)
            w.out["tenant"] = vals
        usable_vals = [parts[id(w)][0][~parts[id(w)][2]] for w in given]
        if kind_int:
            for w in given:
                vals, _, unusable = parts[id(w)]
                c = np.full(w.n, -1, dtype=np.int64)
                c[~unusable] = np.array(vals[~unusable].tolist(), dtype=np.int64)
                codes[id(w)] = c
        else:
            vocab = {t: k for k, t in enumerate(sorted(set(np.concatenate(usable_vals).tolist())))}
            for w in given:
                vals, _, unusable = parts[id(w)]
                c = np.full(w.n, -1, dtype=np.int64)
                for i in np.flatnonzero(~unusable).tolist():
                    c[i] = vocab[vals[i]]
                codes[id(w)] = c
    for w, other in ((en, ch), (ch, en)):
        if id(w) in codes:
            continue
        oc = codes[id(other)]
        distinct = np.unique(oc[oc >= 0])
        if len(distinct) > 1 and w.n:
            raise DataError(
                f"{w.name} have no tenant column but {other.name} have {len(distinct)} "
                f"tenants; give {w.name}.tenant",
                table=w.name,
                column="tenant",
                kind="missing",
                ctx={"tenants": len(distinct)},
            )
        default = int(distinct[0]) if len(distinct) else 0
        codes[id(w)] = np.full(w.n, default, dtype=np.int64)
    return codes[id(en)], codes[id(ch)]


def _as_ints(values: Array | None) -> Array | None:
    """A tenant column as int64 when a check described it by its ints (no nulls)."""
    info = None if values is None else description(values)
    if info is not None and info.ints is not None and info.null is not None:
        if not info.null.any():
            return info.ints
    return values


def graph_tenants(
    ent: Array | None, ch: Array | None, n_ent: int, n_ch: int
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32], list[Hashable]]:
    """Tenant codes and names of checked tables, for the graph build.

    The names are the distinct tenants of entities and chunks together, sorted; each
    row's code is its tenant's place among them, so codes are dense whatever the tenants'
    type (one tenant ``16_000_000`` is code 0, and the graph holds one tenant)."""
    if ent is None and ch is None:
        return np.zeros(n_ent, np.uint32), np.zeros(n_ch, np.uint32), [0]
    ent, ch = _as_ints(ent), _as_ints(ch)
    given = [v for v in (ent, ch) if v is not None]
    names: list[Hashable]
    if all(isinstance(v, np.ndarray) and v.dtype.kind in "iu" for v in given):
        # int tenants (checked: in [0, 2**24)): one sort, no Python object per row
        allv = np.concatenate([v.astype(np.int64, copy=False) for v in given])
        distinct = np.unique(allv)
        names = distinct.tolist()

        def code(v: Array | None, n: int) -> npt.NDArray[np.uint32]:
            if v is None:
                return np.zeros(n, np.uint32)
            return np.searchsorted(distinct, v.astype(np.int64, copy=False)).astype(np.uint32)

    else:
        values = [np.asarray(v, dtype=object) for v in given]
        names = sorted(set(np.concatenate(values).tolist()))
        lookup = {t: k for k, t in enumerate(names)}

        def code(v: Array | None, n: int) -> npt.NDArray[np.uint32]:
            if v is None:
                return np.zeros(n, np.uint32)
            return np.array([lookup[t] for t in v.tolist()], dtype=np.uint32)

    if not names:
        names = [0]
    ec = code(ent, n_ent)
    cc = code(ch, n_ch)
    # A table without tenants is in the single tenant of the other (as check() decided).
    if ent is None and n_ch:
        ec = np.full(n_ent, cc[0], np.uint32)
    if ch is None and n_ent:
        cc = np.full(n_ch, ec[0], np.uint32)
    return ec, cc, names

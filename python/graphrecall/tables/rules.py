"""The row rules of each table (chunks, entities, facts, mentions, aliases, embeddings)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from .columns import description
from .constants import NULL_SEQUENCE, NULL_TIME
from .embeddings import EmbeddingSet
from .values import _floats, _ints, _json_values, _names, _texts, _time_column
from .work import (
    _BLOCK,
    _F32_MAX,
    _I64_MAX,
    _PARENT,
    _U32_LIMIT,
    Array,
    Mask,
    _compact,
    _ids,
    _is_null,
    _later_duplicates,
    _nullable_ids,
    _py,
    _ref,
    _refuse_unencodable,
    _types,
    _Work,
)

if TYPE_CHECKING:
    from .model import GraphTables


def _key(w: _Work, col: str = "id") -> tuple[Array, Mask]:
    """The table's own id column: normalised, unique (later duplicates refused)."""
    ids, unusable = _ids(w, col, nullable=False)
    if ids.dtype.kind in "OU":  # references need no test: they must match these
        _refuse_unencodable(w, col, ids.tolist())
    w.key, w.key_unusable, w.row_ids = ids, unusable, ids
    w.out[col] = ids
    _unique(w, ids, ~unusable, column=col)
    return ids, unusable


def _unique(
    w: _Work,
    keys: Array,
    usable: Mask,
    second: Array | None = None,
    what: str = "id",
    column: str = "id",
) -> None:
    dup = _later_duplicates(keys, usable, second)

    def why(i: int) -> str:
        value = _py(keys[i]) if second is None else _py(second[i])
        return f"duplicate {what} {value!r} ({_first_at(w, int(dup[i]))})"

    w.bad(
        dup >= 0,
        why,
        column=column,
        kind="duplicate",
        value=lambda i: keys[i] if second is None else second[i],
    )


def _first_at(w: _Work, row: int) -> str:
    """Where the first occurrence of a duplicate is: a given row, or a stored one."""
    if row < w.base:
        return f"already stored: {w.name} row {row}"
    return f"first at row {row - w.base}"


def _in_unit_interval(
    w: _Work, col: str, *, nullable: bool
) -> npt.NDArray[np.floating[Any]] | None:
    conv = _floats(w, col)
    if conv is None:
        return None
    c, null = conv
    if not nullable:
        w.bad(null, lambda i: f"{col} is missing or NaN", column=col, kind="missing")
    with np.errstate(invalid="ignore"):
        rng = ~null & ~((c >= 0.0) & (c <= 1.0))
    w.bad(
        rng,
        lambda i: f"{col} = {float(c[i])!r} is not in [0, 1]",
        column=col,
        value=lambda i: float(c[i]),
    )
    return c


def _narrow(codes: npt.NDArray[np.int64]) -> npt.NDArray[np.signedinteger[Any]]:
    """Tenant codes as int32 when they fit (they do when checked: < 2**24, -1)."""
    if not len(codes) or (int(codes.min()) >= -(2**31) and int(codes.max()) < 2**31):
        return codes.astype(np.int32)
    return codes


def _cross_tenant(
    w: _Work,
    left: npt.NDArray[np.int64],
    left_t: npt.NDArray[np.int64],
    right: npt.NDArray[np.int64],
    right_t: npt.NDArray[np.int64],
    why: Callable[[int], str],
    column: str,
    value: Callable[[int], Any],
) -> None:
    if not len(left_t) or not len(right_t):
        return  # no row refers to anything
    left_t, right_t = _narrow(left_t), _narrow(right_t)
    cross = np.zeros(w.n, dtype=bool)
    for a in range(0, w.n, _BLOCK):  # by blocks: no full-size temporaries
        lr, rr = left[a : a + _BLOCK], right[a : a + _BLOCK]
        # Rows -1 read the last tenant, masked by the rows' own test.
        lt, rt = left_t[lr], right_t[rr]
        cross[a : a + _BLOCK] = (lr >= 0) & (rr >= 0) & (lt >= 0) & (rt >= 0) & (lt != rt)
    w.bad(cross, why, column=column, kind="cross_tenant", value=value)


def _check_chunks(ch: _Work) -> None:
    _key(ch)
    for col in ("text", "scope", "category"):
        ch.out[col] = _texts(ch, col)
    ch.out["tags"] = _json_values(ch, "tags", list)
    ch.out["metadata"] = _json_values(ch, "metadata", dict)
    for col in ("created_at", "expires_at", "last_accessed"):
        ch.out[col] = _time_column(ch, col)
    ch.out["confidence"] = _in_unit_interval(ch, "confidence", nullable=True)
    ch.out["access_count"] = _ints(ch, "access_count", 0, _I64_MAX, null_value=None)


def _check_entities(
    en: _Work, ch: _Work, en_t: npt.NDArray[np.int64], ch_t: npt.NDArray[np.int64]
) -> None:
    _key(en)
    for col in ("name", "type", "description"):
        en.out[col] = _texts(en, col)
    en.out["created_at"] = _time_column(en, "created_at")
    if "primary_chunk" in en.cols:
        pc, pc_unusable = _ids(en, "primary_chunk", nullable=True, what="chunk id")
        en.out["primary_chunk"] = pc.astype(object)
        rows = _ref(en, "primary_chunk", pc, pc_unusable, ch, "chunk")
        _cross_tenant(
            en,
            np.arange(en.n, dtype=np.int64),
            en_t,
            rows,
            ch_t,
            lambda i: f"primary_chunk = {_py(pc[i])!r} is in another tenant than the entity",
            "primary_chunk",
            lambda i: pc[i],
        )


def _check_facts(fa: _Work, en: _Work, en_t: npt.NDArray[np.int64], t: GraphTables) -> None:
    if "id" in fa.cols:
        fids, _ = _key(fa)
    else:  # the ids are the rows, so that dropping rows renumbers nothing
        fids = np.arange(fa.n, dtype=np.int64)
        fa.row_ids = fids
        fa.out["id"] = fids
    subj, s_unusable = _ids(fa, "subject", nullable=False, what="entity id")
    s_rows = _ref(fa, "subject", subj, s_unusable, en, "entity")
    fa.out["subject"] = subj
    if "object" in fa.cols:
        obj, o_unusable = _ids(fa, "object", nullable=True, what="entity id")
        o_rows = _ref(fa, "object", obj, o_unusable, en, "entity")
        _cross_tenant(
            fa,
            s_rows,
            en_t,
            o_rows,
            en_t,
            lambda i: (
                f"subject {_py(subj[i])!r} and object {_py(obj[i])!r} are in different tenants"
            ),
            "object",
            lambda i: obj[i],
        )
        fa.out["object"] = _nullable_ids(obj)
        del o_rows
    del s_rows  # row numbers of every fact: not needed any more
    if "predicate" in fa.cols:
        fa.out["predicate"] = _predicates(fa)
    if "object_value" in fa.cols:
        fa.out["object_value"] = _literals(fa)
    fa.out["description"] = _texts(fa, "description")
    fa.out["confidence"] = _in_unit_interval(fa, "confidence", nullable=False)
    stren = _floats(fa, "strength")
    if stren is not None:
        s, null = stren
        fa.bad(null, lambda i: "strength is missing or NaN", column="strength", kind="missing")
        with np.errstate(invalid="ignore"):
            rng = ~null & ~(np.isfinite(s) & (s >= 0.0) & (s <= _F32_MAX))
        fa.bad(
            rng,
            lambda i: f"strength = {float(s[i])!r} is not a finite number >= 0",
            column="strength",
            value=lambda i: float(s[i]),
        )
        fa.out["strength"] = s
    fa.out["status"] = _names(fa, "status", t.statuses, "status")
    fa.out["source"] = _names(fa, "source", t.sources, "source")
    fa.out["access_count"] = _ints(fa, "access_count", 0, _U32_LIMIT, null_value=None)
    for col in ("last_accessed", "created_at", "valid_from", "valid_to"):
        fa.out[col] = _time_column(fa, col)
    vf, vt = fa.out.get("valid_from"), fa.out.get("valid_to")
    if vf is not None and vt is not None:
        inverted = (vf != NULL_TIME) & (vt != NULL_TIME) & (vf > vt)
        fa.bad(
            inverted,
            lambda i: f"valid_from = {vf[i]} is after valid_to = {vt[i]}",
            column="valid_from",
            value=lambda i: vf[i],
        )
    fa.out["sequence"] = _ints(fa, "sequence", -(2**63) + 1, _I64_MAX, null_value=NULL_SEQUENCE)


def _check_mentions(
    me: _Work,
    ch: _Work,
    en: _Work,
    ch_t: npt.NDArray[np.int64],
    en_t: npt.NDArray[np.int64],
) -> None:
    mc, mc_unusable = _ids(me, "chunk", nullable=False, what="chunk id")
    ment, ment_unusable = _ids(me, "entity", nullable=False, what="entity id")
    me.row_ids = None
    c_rows = _ref(me, "chunk", mc, mc_unusable, ch, "chunk")
    e_rows = _ref(me, "entity", ment, ment_unusable, en, "entity")
    _cross_tenant(
        me,
        c_rows,
        ch_t,
        e_rows,
        en_t,
        lambda i: f"chunk {_py(mc[i])!r} and entity {_py(ment[i])!r} are in different tenants",
        "entity",
        lambda i: ment[i],
    )
    dup = _later_duplicates(c_rows, (c_rows >= 0) & (e_rows >= 0), e_rows)
    me.bad(
        dup >= 0,
        lambda i: (
            f"duplicate mention of entity {_py(ment[i])!r} by chunk {_py(mc[i])!r} "
            f"({_first_at(me, int(dup[i]))})"
        ),
        column="entity",
        kind="duplicate",
        value=lambda i: ment[i],
    )
    me.out["chunk"], me.out["entity"] = mc, ment
    me.out["count"] = _ints(me, "count", 1, _U32_LIMIT, null_value=None)


def _check_aliases(al: _Work, en: _Work) -> None:
    ae, ae_unusable = _ids(al, "entity", nullable=False, what="entity id")
    a_rows = _ref(al, "entity", ae, ae_unusable, en, "entity")
    alias = _texts(al, "alias", required=True)
    assert alias is not None
    have = np.array([a is not None for a in alias.tolist()], dtype=bool)
    empty = np.array([a == "" for a in alias.tolist()], dtype=bool)
    al.bad(empty, lambda i: "alias is empty", column="alias", value=lambda i: "")
    usable = (a_rows >= 0) & have
    _unique(al, a_rows.astype(object), usable, alias, what="alias", column="alias")
    al.out["entity"], al.out["alias"] = ae, alias
    al.key, al.key_unusable = alias, ~have


def _predicates(fa: _Work) -> Array:
    arr = fa.cols["predicate"]
    if arr.dtype.kind in "OU":
        _refuse_unencodable(fa, "predicate", arr.tolist())
    if arr.dtype.kind in "iu":
        codes = arr.astype(np.int64)
        fa.bad(
            (codes < 0) | (codes > 2**16 - 1),
            lambda i: f"predicate = {int(codes[i])} is not a predicate code in [0, 65535]",
            column="predicate",
            value=lambda i: codes[i],
        )
        return codes
    if arr.dtype == object and _types(arr) == {str}:
        return arr
    out = np.empty(fa.n, dtype=object)
    badm = np.zeros(fa.n, dtype=bool)
    for i, v in enumerate(arr.tolist()):
        if isinstance(v, str):
            out[i] = str(v)
        else:
            badm[i] = True
    fa.bad(
        badm,
        lambda i: (
            "predicate is missing"
            if _is_null(arr[i])
            else f"predicate = {_py(arr[i])!r} is not text (or all int codes)"
        ),
        column="predicate",
        value=lambda i: arr[i],
    )
    return out


def _literals(fa: _Work) -> Array:
    arr = fa.cols["object_value"]
    if arr.dtype == object and _types(arr) <= {str, type(None)}:
        # every value is text or null: nothing to refuse or convert
        return arr if description(arr) is not None else arr.copy()
    out = np.empty(fa.n, dtype=object)
    badm = np.zeros(fa.n, dtype=bool)
    for i, v in enumerate(arr.tolist()):
        v = _py(v)
        if _is_null(v):
            continue
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            badm[i] = True
        elif isinstance(v, int) and not -(2**63) <= v <= _I64_MAX:
            badm[i] = True
        else:
            out[i] = v
    fa.bad(
        badm,
        lambda i: f"object_value = {_py(arr[i])!r} is not a str, int or float",
        column="object_value",
        value=lambda i: arr[i],
    )
    return out


def _check_embeddings(
    sets: list[EmbeddingSet],
    w: Mapping[str, _Work],
    base: Mapping[str, int],
    label: Mapping[str, str],
) -> tuple[list[_Work], list[EmbeddingSet]]:
    works: list[_Work] = []
    mats: list[npt.NDArray[np.float64] | None] = []
    dims: list[npt.NDArray[np.int64]] = []
    rows_of: list[npt.NDArray[np.int64]] = []
    for j, es in enumerate(sets):
        name = f"embeddings[{j}]"
        x = _Work(name, {"id": es.ids}, label.get(name, name), base.get(name, 0))
        ids, unusable = _ids(x, "id", nullable=False)
        x.row_ids = ids
        x.out["id"] = ids
        parent = w[_PARENT[es.kind]]
        what = {"entity": "entity", "chunk": "chunk", "alias": "alias"}[es.kind]
        rows_of.append(_ref(x, "id", ids, unusable, parent, what))
        v = es.vectors
        if v.ndim == 2:
            try:
                mat = np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError):
                raise DataError(
                    f"{name}: vectors must hold numbers, got dtype {v.dtype}",
                    table=name,
                    column="vector",
                    kind="invalid_value",
                ) from None
            mats.append(mat)
            dims.append(np.full(len(v), v.shape[1], dtype=np.int64))
        else:
            d = np.zeros(len(v), dtype=np.int64)
            bad_vec = np.zeros(len(v), dtype=bool)
            for i, vec in enumerate(v.tolist()):
                try:
                    a = np.asarray(vec, dtype=np.float64)
                except (TypeError, ValueError):
                    bad_vec[i] = True
                    continue
                if a.ndim != 1:
                    bad_vec[i] = True
                d[i] = len(a) if a.ndim == 1 else 0
            x.bad(bad_vec, lambda i: "vector is not a 1-D sequence of numbers", column="vector")
            mats.append(None)
            dims.append(d)
        works.append(x)
    # The dimension of each (kind, model): that of most of its vectors (ties: the first).
    groups: dict[tuple[str, str | None], list[int]] = {}
    for j, es in enumerate(sets):
        groups.setdefault((es.kind, es.model), []).append(j)
    out: list[EmbeddingSet] = []
    expected: dict[int, int] = {}
    for (kind, model), members in groups.items():
        alld = np.concatenate([dims[j] for j in members])
        alld = alld[alld > 0]
        if len(alld):
            vals, first_at, counts = np.unique(alld, return_index=True, return_counts=True)
            best = np.lexsort((first_at, -counts))[0]
            dim = int(vals[best])
        else:
            dim = 0
        for j in members:
            expected[j] = dim
        # one vector per (kind, model, id)
        sizes = [len(rows_of[j]) for j in members]
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        rows = np.concatenate([rows_of[j] for j in members])
        dup = _later_duplicates(rows, rows >= 0)
        for k, j in enumerate(members):
            x = works[j]
            d = dup[offsets[k] : offsets[k + 1]]
            ids_j = x.out["id"]

            def why(
                i: int,
                d: npt.NDArray[np.int64] = d,
                j: int = j,
                ids_j: Array | None = ids_j,
                kind: str = kind,
                model: str | None = model,
                members: list[int] = members,
                offsets: npt.NDArray[np.int64] = offsets,
            ) -> str:
                m = int(np.searchsorted(offsets, d[i], "right")) - 1
                where = f"row {int(d[i] - offsets[m])}"
                if members[m] != j:
                    where += f" of embeddings[{members[m]}]"
                rid = None if ids_j is None else _py(ids_j[i])
                return f"duplicate vector of {kind} {rid!r} for model {model!r} (first at {where})"

            x.bad(
                d >= 0,
                why,
                column="id",
                kind="duplicate",
                value=None if ids_j is None else ids_j.__getitem__,
            )
    for j, es in enumerate(sets):
        x = works[j]
        dim = expected[j]
        wrong = dims[j] != dim

        def why_dim(
            i: int, d: npt.NDArray[np.int64] = dims[j], dim: int = dim, model: str | None = es.model
        ) -> str:
            return (
                f"vector has dimension {int(d[i])}; model {model!r} has "
                f"dimension {dim} (that of most of its vectors)"
            )

        x.bad(wrong & (dims[j] > 0), why_dim, column="vector")
        x.bad(wrong & (dims[j] == 0), lambda i: "vector is empty", column="vector")
        given = mats[j]
        if given is not None:
            mat = given
        else:
            mat = np.zeros((x.n, max(dim, 0)), dtype=np.float64)
            for i, vec in enumerate(es.vectors.tolist()):
                if dims[j][i] == dim and dim > 0:
                    mat[i] = np.asarray(vec, dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            finite = (
                np.isfinite(mat.astype(np.float32)).all(axis=1)
                if mat.shape[1]
                else np.ones(x.n, dtype=bool)
            )
        x.bad(
            ~finite & ~wrong,
            lambda i: "vector holds NaN or infinity (in float32)",
            column="vector",
        )
        keep = x.finish()
        all_ids = x.out["id"]
        assert all_ids is not None
        ids = all_ids[keep]
        if mat.shape[1] == dim:
            vectors = np.ascontiguousarray(mat[keep], dtype=np.float32)
        else:  # every row has the wrong dimension
            vectors = np.zeros((0, dim), dtype=np.float32)
        if len(ids):  # a set left without vectors is no set (as a store reads it back)
            out.append(EmbeddingSet(es.kind, _compact(ids), vectors, es.model))
    return works, out

"""Tenant changes of existing entities and chunks as a generation (``CoreGraph.with_tenants``):
checked against the rows that name the moved rows only, so the cost is theirs.

A moved entity's facts (both ends), mentions and primary chunk, and a moved chunk's
mentions and the entities whose primary chunk it is, must stay within one tenant: those
rows, read from the graph's adjacency and mention rows (an entity's primary-chunk referrers
by one vectorised pass over ``entities.primary_chunk``), are checked as a fresh build's
check of the whole tables would check them. A move to a tenant the graph does not hold, or
one that leaves a tenant without entities, changes the tenant vocabulary (the codes are
the places of the sorted tenants): those take a rebuild (see :mod:`.row_updates`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DataError
from ..graph import KnowledgeGraph
from ..tables import BadDataError, GraphTables, LoadReport
from ..tables import check_tables as _check
from .changes import _member
from .dead import dead_entities_of
from .delete import entity_facts
from .overlay import TenantChange

Array = npt.NDArray[Any]
I64 = npt.NDArray[np.int64]
_EMPTY = np.zeros(0, dtype=np.uint32)


def tenant_change(
    graph: KnowledgeGraph, table: str, rows: I64, tenants: Array
) -> TenantChange | None:
    """The core's change moving ``rows`` of ``table`` to ``tenants``; None when the tenant
    vocabulary changes with it (a tenant the graph does not hold, or an entity tenant left
    without entities)."""
    names = graph.tenants.names
    try:
        if any(t not in names for t in tenants.tolist()):
            return None
        codes = graph.tenants.encode_names(tenants, table, "tenant", np.uint32)
    except (DataError, TypeError):
        return None
    codes = np.ascontiguousarray(codes, dtype=np.uint32)
    at = np.ascontiguousarray(rows, dtype=np.uint32)
    if table == "chunks":
        return TenantChange(_EMPTY, _EMPTY, at, codes)
    core = graph.core
    old = core.entity_tenants()[rows]
    for t in np.unique(old[old != codes]).tolist():
        left = len(core.tenant_entities(t)) - int((old == t).sum()) + int((codes == t).sum())
        if left <= 0:
            return None
    return TenantChange(at, codes, _EMPTY, _EMPTY)


def _ids(cols: dict[str, Array], rows: I64) -> Array:
    return cols["id"][rows]


def check_moves(
    graph: KnowledgeGraph, base: GraphTables, table: str, rows: I64, tenants: Array, op: str
) -> None:
    """Check that moving ``rows`` of ``table`` to ``tenants`` leaves no fact, mention or
    primary chunk joining two tenants (``base``: the tables of ``graph``); BadDataError
    (the report of the rows that would) otherwise. The rows checked are those that name
    the moved rows."""
    ents, chunks = base.entities, base.chunks
    moved_e = rows if table == "entities" else np.zeros(0, np.int64)
    moved_c = rows if table == "chunks" else np.zeros(0, np.int64)
    core = graph.core
    # Facts of moved entities, and the entities at their other end.
    f_rows = entity_facts(graph, moved_e) if len(moved_e) else np.zeros(0, np.int64)
    facts: dict[str, Array] = {}
    other_e: list[Any] = []
    for c in ("id", "subject", "object"):
        if c in base.facts:
            facts[c] = base.facts[c][f_rows]
    for c in ("subject", "object"):
        if c in facts:
            other_e += [v for v in facts[c].tolist() if v is not None]
    # Mentions of moved entities and chunks.
    m_chunk: list[int] = []
    m_entity: list[int] = []
    for e in moved_e.tolist():
        for c in core.entity_chunks(int(e))[0].tolist():
            m_chunk.append(c)
            m_entity.append(e)
    for c in moved_c.tolist():
        for e in core.chunk_entities(int(c))[0].tolist():
            m_chunk.append(c)
            m_entity.append(e)
    # Entities whose primary chunk is a moved chunk.
    e_rows = np.unique(
        np.concatenate(
            [
                graph.entity_index(other_e) if other_e else np.zeros(0, np.int64),
                np.asarray(m_entity, dtype=np.int64),
            ]
        )
    ).astype(np.int64)
    pc = ents.get("primary_chunk")
    named_pc = np.zeros(0, np.int64)
    if len(moved_c) and pc is not None and chunks is not None:
        named_pc = np.flatnonzero(_member(pc, _ids(chunks, moved_c)))
        named_pc = np.setdiff1d(named_pc, dead_entities_of(graph))
        e_rows = np.union1d(e_rows, named_pc).astype(np.int64)
    e_rows = np.setdiff1d(e_rows, moved_e).astype(np.int64)
    c_rows = np.setdiff1d(np.asarray(m_chunk, dtype=np.int64), moved_c).astype(np.int64)
    # The view: the rows that name the moved ones, the moved rows last (as "new" rows).
    n_other = len(e_rows) if table == "entities" else len(c_rows)

    def id_tenant(cols: dict[str, Array], others: I64, moved: I64) -> dict[str, Array]:
        out = {"id": np.concatenate([cols["id"][others], cols["id"][moved]])}
        out["tenant"] = np.concatenate(
            [cols["tenant"][others], tenants if len(moved) else cols["tenant"][moved]]
        )
        return out

    ent_view = id_tenant(ents, e_rows, moved_e)
    if len(named_pc) and pc is not None:
        keep = _member(ent_view["id"], ents["id"][named_pc])
        view_pc = np.empty(len(keep), dtype=object)
        view_pc[:] = None
        view_pc[keep] = pc[np.concatenate([e_rows, moved_e])][keep]
        ent_view["primary_chunk"] = view_pc
    chunk_view = None if chunks is None else id_tenant(chunks, c_rows, moved_c)
    mentions = None
    if m_chunk:
        assert chunks is not None
        mentions = {
            "chunk": chunks["id"][np.asarray(m_chunk, dtype=np.int64)],
            "entity": ents["id"][np.asarray(m_entity, dtype=np.int64)],
        }
    if not facts or "subject" not in facts:
        facts = {"subject": ents["id"][:0]}
    view = GraphTables(
        entities=ent_view,
        facts=facts,
        chunks=chunk_view,
        mentions=mentions,
        statuses=base.statuses,
        sources=base.sources,
    )
    label = f"{op} records"
    checked = _check(view, "skip", base={table: n_other}, label={table: label})
    mine = tuple(t for t in checked.report.tables if t.table == label)
    if not LoadReport(mine).ok:
        raise BadDataError(LoadReport(mine, "raise", "update"))
    if not all(bool(k.all()) for k in checked.keep.values()):
        raise BadDataError(LoadReport(checked.report.tables, "raise", "update"))

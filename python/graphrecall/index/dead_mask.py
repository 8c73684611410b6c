"""The index of a graph that holds deleted entities or chunks (tombstones of a
:class:`~graphrecall.LiveGraph`), over the same rows: every room that enumerates
entities or chunks by row skips the dead ones, so that a retrieval answer is a fresh
build's without them, and a delete costs what it changes, not a new base.

The rooms and how each masks (rows keep their numbers, so index-order tie-breaks are a
fresh build's):

* names and aliases (exact, fuzzy, keyword): lookups skip the dead rows
  (:func:`~graphrecall.anchors.names_grow.without_rows`; no score reads another entry);
* BM25 over chunks: the dead chunks' postings go and the tenants that lost rows are
  rescored with their new ``N``, ``avgdl`` and ``n(q)``
  (:func:`~graphrecall.anchors.keyword_drop.without_rows`; linear in those tenants'
  postings, one copy of the postings arrays, as an append);
* entity and chunk vectors: exact tenants are copied without the rows
  (:func:`~graphrecall.anchors.vectors.drop.without_rows`); a dead row in a sketch or
  HNSW tenant takes the new base instead (``without_dead_rows``);
* mention links: the dead rows' links go;
* primary chunks: a dead entity's, and any entity's dead primary chunk, are none;
* tenants: ``entity_tenant`` / ``chunk_tenant`` give the dead rows :data:`DEAD_TENANT`, a
  code no tenant has, so that a recipe listing a tenant's rows by code never meets them.

Facts need nothing here: a deleted entity's facts are fact tombstones, which the graph
masks, and the fact columns keep their rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..anchors.keyword_drop import without_rows as keywords_without
from ..anchors.names_grow import without_rows as names_without
from ..anchors.vectors.drop import without_rows as vectors_without
from ..graph import KnowledgeGraph
from ..tables import GraphTables
from .columns import MentionLinks
from .fact_changes import FACT_TEXT_INPUTS, fact_rows_of

if TYPE_CHECKING:
    from .graph_index import GraphIndex

I64 = npt.NDArray[np.int64]

#: The tenant code of a deleted entity or chunk in ``GraphIndex.entity_tenant`` /
#: ``chunk_tenant`` (no tenant has it).
DEAD_TENANT = np.iinfo(np.uint32).max


def dead_of(graph: KnowledgeGraph) -> tuple[I64, I64]:
    """The graph's deleted (entity rows, chunk rows), sorted."""
    core = graph.core
    return (
        np.asarray(core.dead_entities(), dtype=np.int64),
        np.asarray(core.dead_chunks(), dtype=np.int64),
    )


def can_mask(
    previous: GraphIndex | None,
    tables: GraphTables,
    graph: KnowledgeGraph,
    appended: dict[str, int],
    vector_backend: str,
    exact_below: int,
) -> bool:
    """Whether the index of ``graph`` (holding deleted entities or chunks) can be
    ``previous`` updated with masks: ``previous`` indexed the same entity, chunk, mention
    and alias rows (``appended``: what ``appended_rows`` found), which the update keeps,
    with the same vector settings, over the same fact text columns or ones the live write
    recorded (a dead entity's facts name an id the graph no longer knows: their columns
    are kept, never computed), every row it masked is still dead, and each dead row lies
    in an exact vector tenant."""
    if previous is None:
        return False
    old = previous.graph
    before, after = previous.tables.facts, tables.facts
    if not all(before.get(c) is after.get(c) for c in FACT_TEXT_INPUTS) and (
        fact_rows_of(graph, old, before, after) is None
    ):
        return False
    if appended.get("entities") != old.n_entities or appended.get("chunks") != old.n_chunks:
        return False
    if "mentions" not in appended or "aliases" not in appended:
        return False
    if (previous.vector_backend, previous.exact_below) != (vector_backend, exact_below):
        return False
    dead_e, dead_c = dead_of(graph)
    old_e, old_c = dead_of(old)
    if len(np.setdiff1d(old_e, dead_e)) or len(np.setdiff1d(old_c, dead_c)):
        return False
    core = graph.core
    for vi, dead, tenants in (
        (previous.entity_vectors, dead_e, core.entity_tenants),
        (previous.chunk_vectors, dead_c, core.chunk_tenants),
    ):
        if vi is not None and len(dead):
            kinds = vi.backends
            if any(kinds.get(int(t)) != "exact" for t in np.unique(tenants()[dead]).tolist()):
                return False
    return True


def mask_dead_rows(index: GraphIndex) -> bool:
    """Mask, in place, the deleted entities and chunks of ``index.graph`` in every room of
    the freshly made ``index`` (see the module doc; rows a room already masks are left as
    they are). Returns False when a room cannot (then ``index`` is not to be used)."""
    dead_e, dead_c = dead_of(index.graph)
    if not len(dead_e) and not len(dead_c):
        return True
    masked: list[str] = []
    for kind, dead in (("entity", dead_e), ("chunk", dead_c)):
        vi = index.vectors_of(kind)[1]
        if vi is not None and len(dead):
            got = vectors_without(vi, dead)
            if got is None:
                return False
            if kind == "entity":
                index.entity_vectors = got
            else:
                index.chunk_vectors = got
    if len(dead_e):
        names = names_without(index.names, dead_e.tolist())
        if names is not index.names:
            index.names, masked = names, [*masked, "names"]
        tenant = index.entity_tenant.copy()
        tenant[dead_e] = DEAD_TENANT
        index.entity_tenant = tenant
    if len(dead_c):
        kw = index.chunk_keywords
        if kw is not None:
            got_kw = keywords_without(kw, dead_c)
            if got_kw is not kw:
                index.chunk_keywords, masked = got_kw, [*masked, "chunk_keywords"]
        tenant = index.chunk_tenant.copy()
        tenant[dead_c] = DEAD_TENANT
        index.chunk_tenant = tenant
    index.kept_text_indexes = tuple(x for x in index.kept_text_indexes if x not in masked)
    index.extended_text_indexes = tuple(x for x in index.extended_text_indexes if x not in masked)
    # Mention links and primary chunks without the dead rows.
    mc, me, cnt = index._mention_rows
    gone = np.isin(mc, dead_c) | np.isin(me, dead_e)
    if gone.any():
        keep = ~gone
        index._mention_rows = (mc[keep], me[keep], cnt[keep])
        index.mentions = MentionLinks.build(
            mc[keep], me[keep], cnt[keep], index.graph.n_chunks, index.graph.n_entities
        )
    primary = index.entity_primary_chunk
    clear = np.isin(primary, dead_c)
    clear[dead_e] |= primary[dead_e] >= 0
    if clear.any():
        primary = primary.copy()
        primary[clear] = -1
        index.entity_primary_chunk = primary
    return True

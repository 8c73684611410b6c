"""A LlamaIndex retriever over :class:`~graphrecall.GraphRAG` (``pip install
graphrecall[llamaindex]``, which brings ``llama-index-core``).

Each ranked fact and chunk becomes a ``NodeWithScore`` holding a ``TextNode``: the passage (or
the fact as a sentence) as text, the hit's score, and the provenance in ``metadata``: recipe,
kind, id, rank, tenant, score components and the graph path (see
:class:`graphrecall.integrations.items.Item`). The bulky provenance keys (``path``,
``components``) are kept out of the text LlamaIndex shows an LLM or an embedder.
``retrieve`` runs in the caller's thread; ``aretrieve`` runs on graphrecall's thread pool
(:meth:`GraphRAG.aretrieve`), never blocking the event loop.

Example:
    >>> from graphrecall import GraphRAG
    >>> from graphrecall.integrations.llamaindex import GraphRecallRetriever
    >>> rag = GraphRAG.load("my-index")  # doctest: +SKIP
    >>> retriever = GraphRecallRetriever(rag, tenant="stark", recipe="ppr", k=5)  # doctest: +SKIP
    >>> nodes = retriever.retrieve("Who did Robert Baratheon marry?")  # doctest: +SKIP
    >>> nodes[0].score, nodes[0].node.metadata["path_text"]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ..errors import ParameterError
from .items import KINDS, Item, aretrieve_items, check_kinds, item_id, retrieve_items

if TYPE_CHECKING:
    from llama_index.core.callbacks import CallbackManager

    from ..rag import GraphRAG

__all__ = ["GraphRecallRetriever"]

#: Metadata kept out of the text LlamaIndex builds for LLMs and embedders.
HIDDEN = ["path", "components", "query", "rank"]


class GraphRecallRetriever(BaseRetriever):
    """LlamaIndex ``BaseRetriever`` answering from a :class:`~graphrecall.GraphRAG`.

    Args:
        rag: The retrieval surface to query.
        recipe: A registered recipe name, or None to let the router choose per query.
        tenant: The tenant (may be omitted when the graph holds one).
        k: At most this many nodes (None: every hit the recipe returned).
        kinds: Which hits become nodes: "fact", "chunk" or both (facts first).
        params: The recipe's parameters by name (e.g. ``{"max_hops": 2}``).
        context: Caller context for routing and the recipes that take it.
        now: Unix seconds to score at (None: the clock).
        use_cache: Serve repeated questions from the GraphRAG's result cache.
        callback_manager: LlamaIndex's callback manager.

    Raises:
        ParameterError: An unknown kind or a bad ``k``.
    """

    def __init__(
        self,
        rag: GraphRAG,
        *,
        recipe: str | None = None,
        tenant: Hashable | None = None,
        k: int | None = None,
        kinds: Sequence[str] = KINDS,
        params: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        now: int | None = None,
        use_cache: bool = True,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if k is not None and (type(k) is not int or k < 0):
            raise ParameterError(f"invalid parameter k: {k!r} (give a non-negative int or None)")
        self.rag = rag
        self.options: dict[str, Any] = {
            "recipe": recipe,
            "tenant": tenant,
            "now": now,
            "context": context,
            "params": dict(params or {}),
            "kinds": check_kinds(kinds),
            "k": k,
            "use_cache": use_cache,
        }
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        items = retrieve_items(self.rag, query_bundle.query_str, **self.options)
        return [_node(i) for i in items]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        items = await aretrieve_items(self.rag, query_bundle.query_str, **self.options)
        return [_node(i) for i in items]


def _node(item: Item) -> NodeWithScore:
    node = TextNode(
        id_=item_id(item.metadata),
        text=item.text,
        metadata=item.metadata,
        excluded_llm_metadata_keys=HIDDEN,
        excluded_embed_metadata_keys=HIDDEN,
    )
    return NodeWithScore(node=node, score=item.score)

"""A LangChain retriever over :class:`~graphrecall.GraphRAG` (``pip install
graphrecall[langchain]``, which brings ``langchain-core``).

Each ranked fact and chunk becomes a ``Document`` whose ``page_content`` is the passage (or the
fact as a sentence) and whose ``metadata`` holds the score and the provenance: recipe, kind,
id, rank, tenant, score components and the graph path (see
:class:`graphrecall.integrations.items.Item`). ``invoke`` runs the query in the caller's
thread; ``ainvoke`` runs it on graphrecall's thread pool (:meth:`GraphRAG.aretrieve`), never
blocking the event loop.

Example:
    >>> from graphrecall import GraphRAG
    >>> from graphrecall.integrations.langchain import GraphRecallRetriever
    >>> rag = GraphRAG.load("my-index")  # doctest: +SKIP
    >>> retriever = GraphRecallRetriever(rag=rag, tenant="stark", k=5)  # doctest: +SKIP
    >>> docs = retriever.invoke("Who did Robert Baratheon marry?")  # doctest: +SKIP
    >>> docs[0].metadata["score"], docs[0].metadata["path_text"]  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from ..rag import GraphRAG
from .items import KINDS, Item, aretrieve_items, item_id, retrieve_items

__all__ = ["GraphRecallRetriever"]


class GraphRecallRetriever(BaseRetriever):
    """LangChain ``BaseRetriever`` answering from a :class:`~graphrecall.GraphRAG`.

    Attributes:
        rag: The retrieval surface to query.
        recipe: A registered recipe name, or None to let the router choose per query.
        tenant: The tenant (may be omitted when the graph holds one).
        k: At most this many documents (None: every hit the recipe returned).
        kinds: Which hits become documents: "fact", "chunk" or both (facts first).
        params: The recipe's parameters by name (e.g. ``{"max_hops": 2}``).
        context: Caller context for routing and the recipes that take it.
        now: Unix seconds to score at (None: the clock).
        use_cache: Serve repeated questions from the GraphRAG's result cache.
    """

    rag: GraphRAG
    recipe: str | None = None
    tenant: Any = None
    k: int | None = Field(default=None, ge=0)
    kinds: tuple[str, ...] = KINDS
    params: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] | None = None
    now: int | None = None
    use_cache: bool = True

    def _options(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "tenant": self.tenant,
            "now": self.now,
            "context": self.context,
            "params": self.params,
            "kinds": self.kinds,
            "k": self.k,
            "use_cache": self.use_cache,
        }

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [_document(i) for i in retrieve_items(self.rag, query, **self._options())]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        items = await aretrieve_items(self.rag, query, **self._options())
        return [_document(i) for i in items]


def _document(item: Item) -> Document:
    return Document(page_content=item.text, metadata=item.metadata, id=item_id(item.metadata))

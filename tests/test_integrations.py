"""The LangChain and LlamaIndex retrievers, through their own interfaces (``invoke`` /
``ainvoke``, ``retrieve`` / ``aretrieve``), against the hits of ``GraphRAG.retrieve``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from graphrecall import GraphRAG, ParameterError
from graphrecall.demo import demo_data, demo_tables
from graphrecall.integrations.items import result_items

NOW = 1_767_225_600
Q = "Who are Ned Stark's allies?"


@pytest.fixture(scope="module")
def rag() -> GraphRAG:
    return GraphRAG.from_tables(demo_tables(demo_data()))


def test_importing_graphrecall_imports_no_framework() -> None:
    code = (
        "import sys, graphrecall, graphrecall.rag, graphrecall.cli, graphrecall.integrations\n"
        "import graphrecall.integrations.items\n"
        "print([m for m in ('langchain_core', 'llama_index', 'mcp') if m in sys.modules])"
    )
    src = str(Path(__file__).resolve().parents[1] / "python")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_items_carry_score_and_provenance(rag: GraphRAG) -> None:
    res = rag.retrieve("What is JACQ?", recipe="hybrid_expand", tenant="devteam", now=NOW)
    items = result_items(res)
    assert len(items) == len(res.facts) + len(res.chunks)
    kinds = [i.metadata["kind"] for i in items]
    assert kinds == ["fact"] * len(res.facts) + ["chunk"] * len(res.chunks)
    for item, hit in zip(items, [*res.facts, *res.chunks], strict=True):
        m = item.metadata
        assert (m["recipe"], m["tenant"], m["id"], m["score"]) == (
            "hybrid_expand",
            "devteam",
            hit.id,
            hit.score,
        )
        assert m["components"] == dict(hit.components)
        assert [s["entity"] for s in m["path"]] == [s.entity for s in hit.path]
    assert [i.metadata["kind"] for i in result_items(res, kinds=["chunk"], k=2)] == ["chunk"] * 2
    with pytest.raises(ParameterError, match="kinds"):
        result_items(res, kinds=["entity"])
    with pytest.raises(ParameterError, match="k"):
        result_items(res, k=-1)


def test_langchain_retriever(rag: GraphRAG) -> None:
    pytest.importorskip("langchain_core")
    from graphrecall.integrations.langchain import GraphRecallRetriever
    from langchain_core.documents import Document

    retriever = GraphRecallRetriever(
        rag=rag, recipe="chunk_boost", tenant="stark", now=NOW, params={"k": 4}
    )
    docs = retriever.invoke(Q)
    want = rag.retrieve(Q, recipe="chunk_boost", tenant="stark", now=NOW, k=4)
    assert all(isinstance(d, Document) for d in docs)
    assert [d.page_content for d in docs] == [c.text for c in want.chunks]
    assert [d.metadata["score"] for d in docs] == [c.score for c in want.chunks]
    assert docs[0].metadata["kind"] == "chunk" and docs[0].metadata["recipe"] == "chunk_boost"
    assert docs[0].id == f"stark:chunk:{want.chunks[0].id}"
    assert docs[0].metadata["path"] and docs[0].metadata["components"]["similarity"] > 0
    adocs = asyncio.run(retriever.ainvoke(Q))
    assert [(d.page_content, d.metadata) for d in adocs] == [
        (d.page_content, d.metadata) for d in docs
    ]
    facts = GraphRecallRetriever(rag=rag, tenant="alice", k=3, recipe="spreading_activation")
    got = facts.invoke("What is JACQ?")
    assert len(got) == 3 and got[0].page_content == "JACQ Project uses DuckDB"
    assert got[0].metadata["predicate"] == "uses" and got[0].metadata["hop"] == 0
    with pytest.raises(ParameterError, match="recipe"):
        GraphRecallRetriever(rag=rag, recipe="nope", tenant="stark").invoke(Q)


def test_llamaindex_retriever(rag: GraphRAG) -> None:
    pytest.importorskip("llama_index.core")
    from graphrecall.integrations.llamaindex import HIDDEN, GraphRecallRetriever
    from llama_index.core.schema import MetadataMode, NodeWithScore

    retriever = GraphRecallRetriever(rag, recipe="ppr", tenant="stark", now=NOW, k=5)
    nodes = retriever.retrieve(Q)
    want = rag.retrieve(Q, recipe="ppr", tenant="stark", now=NOW)
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.get_content() for n in nodes] == [c.text for c in want.chunks[:5]]
    assert [n.score for n in nodes] == [c.score for c in want.chunks[:5]]
    meta = nodes[0].node.metadata
    assert (meta["recipe"], meta["kind"], meta["tenant"]) == ("ppr", "chunk", "stark")
    assert nodes[0].node.node_id == f"stark:chunk:{want.chunks[0].id}"
    llm_text = nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "recipe: ppr" in llm_text and not any(f"{k}:" in llm_text for k in HIDDEN)
    anodes = asyncio.run(retriever.aretrieve(Q))
    assert [(n.node.node_id, n.score) for n in anodes] == [(n.node.node_id, n.score) for n in nodes]
    with pytest.raises(ParameterError, match="kinds"):
        GraphRecallRetriever(rag, kinds=["entity"])

"""graphrecall.evaluate: recipes compared on questions with gold passages; ``graphrecall eval``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from graphrecall import GraphRAG
from graphrecall.cli import main
from graphrecall.errors import ParameterError
from graphrecall.evaluate import AUTO, EvalRow, compare, format_table, load_questions, recall_at
from test_router_data import NOW, _emb, _tables


def _rag() -> GraphRAG:
    return GraphRAG.from_tables(
        _tables({"a": ["Ada Lovelace", "Alan Turing", "Grace Hopper"]}), embedder=_emb()
    )


def test_recall_at() -> None:
    assert recall_at([["a", "b", "c"], ["x"]], [{"a", "c"}, {"y"}], 2) == 25.0
    assert recall_at([["a"]], [set()], 1) == 0.0
    with pytest.raises(ParameterError):
        recall_at([["a"]], [], 1)


def test_compare_runs_recipes_and_the_router() -> None:
    rag = _rag()
    qs = ["Grace Hopper", "Alan Turing"]
    gold = [{"c-a2"}, {"c-a1"}]
    rows = compare(rag, qs, gold, recipes=[AUTO, "bm25", "vector"], ks=(1, 3), now=NOW)
    assert [r.recipe for r in rows] == [AUTO, "bm25", "vector"]
    by = {r.recipe: r for r in rows}
    assert by["bm25"].recall == {1: 100.0, 3: 100.0}
    assert by[AUTO].routed == {"ppr": 2} and by["bm25"].routed == {}
    assert by[AUTO].graph_us_per_query is not None and by["bm25"].graph_us_per_query is None
    assert all(r.questions == 2 and r.us_per_query > 0 for r in rows)
    table = format_table(rows, title="toy")
    assert "| toy | bm25 | 100.0 | 100.0 |" in table and "routed: ppr 2" in table
    assert set(by["bm25"].as_dict()) >= {"recipe", "R@1", "R@3", "us_per_query"}
    # A bare index works too.
    assert compare(rag.index, qs, gold, recipes=["bm25"], ks=(1,))[0].recall[1] == 100.0


def test_compare_refuses_bad_arguments() -> None:
    rag = _rag()
    with pytest.raises(ParameterError, match="recipe"):
        compare(rag, ["q"], [{"c"}], recipes=["nope"])
    with pytest.raises(ParameterError, match="gold"):
        compare(rag, ["q"], [], recipes=["bm25"])
    with pytest.raises(ParameterError, match="ks"):
        compare(rag, ["q"], [{"c"}], recipes=["bm25"], ks=(0,))
    with pytest.raises(ParameterError, match="query_vectors"):
        compare(rag, ["q"], [{"c"}], recipes=["bm25"], query_vectors=[[1.0], [2.0]])


def test_eval_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = _rag().save(tmp_path / "index")
    qfile = tmp_path / "q.jsonl"
    qfile.write_text(
        "\n".join(
            json.dumps(x)
            for x in (
                {"question": "Grace Hopper", "gold": ["c-a2"]},
                {"question": "Alan Turing", "gold": ["c-a1"]},
            )
        )
    )
    code = main(
        ["eval", str(saved), str(qfile), "--no-embedder", "--recipes", "bm25,auto", "--json"]
    )
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["recipe"] for r in rows] == ["bm25", "auto"] and rows[0]["R@2"] == 100.0
    assert main(["eval", str(saved), str(qfile), "--no-embedder", "--recipes", "nope"]) == 1
    assert "nope" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"question": 1}]))
    with pytest.raises(ParameterError, match="item 0"):
        load_questions(bad)
    assert main(["eval", str(tmp_path / "missing"), str(qfile)]) == 1


def test_eval_row_is_frozen() -> None:
    row = EvalRow("x", 1, {2: 1.0}, 1.0, None)
    with pytest.raises(AttributeError):
        row.recipe = "y"  # type: ignore[misc]

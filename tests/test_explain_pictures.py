"""Explanation pictures: the model every format draws, SVG as XML, DOT and Mermaid syntax,
the self-contained HTML page, escaping of hostile names, and ``graphrecall query
--explain-*``. The page in a real browser is tests/test_explain_browser.py."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from graphrecall.cli import main
from graphrecall.context import ContextBlock
from graphrecall.errors import ParameterError
from graphrecall.explain import (
    explain,
    explain_graph,
    to_dot,
    to_html,
    to_mermaid,
    to_svg,
)
from graphrecall.explain.svg import layout
from graphrecall.recipes import ChunkHit, EntityHit, FactHit, RetrievalResult, Step

EVIL = '<script>alert("x")</script> & ]]> --> |pipe| \\N "q" #1;\x00\x1b'


def sample(evil: str = "Ned Stark", n_facts: int = 3) -> RetrievalResult:
    """A two-hop result: anchor ned -> robert -> cersei, facts along the path, a vector-only
    chunk, a graph chunk and a literal fact."""
    ned = Step("ned", evil, "ALLY", 1, "out")
    rob = Step("robert", "Robert Baratheon", "SPOUSE", 2, "out")
    cer = Step("cersei", "Cersei Lannister")
    rob_end = Step("robert", "Robert Baratheon")
    facts = [
        FactHit(
            1,
            "ned",
            evil,
            "ALLY",
            "robert",
            "Robert Baratheon",
            None,
            0.9,
            0.8,
            1,
            components={"confidence": 0.9, "match": 0.88},
            path=(ned, Step("robert", "Robert Baratheon")),
        ),
        FactHit(
            2,
            "robert",
            "Robert Baratheon",
            "SPOUSE",
            "cersei",
            "Cersei Lannister",
            None,
            0.9,
            0.6,
            2,
            components={"confidence": 0.9},
            path=(ned, rob, cer),
        ),
        FactHit(
            3,
            "ned",
            evil,
            "title",
            None,
            None,
            "Lord <b>of</b> Winterfell",
            0.99,
            0.5,
            1,
            path=(Step("ned", evil, "title", 3, "out"),),
        ),
    ]
    facts += [
        FactHit(100 + i, "ned", evil, "knows", None, None, f"person {i}", 0.5, 0.1, 1)
        for i in range(max(n_facts - 3, 0))
    ]
    return RetrievalResult(
        recipe="graph_recall",
        query=f"Who is {evil}?",
        tenant="stark",
        anchors=(EntityHit("ned", evil, 0.86, 0, "vector"),),
        entities=(EntityHit("ned", evil, 0.86, 0, "vector"),),
        facts=tuple(facts[:n_facts]),
        chunks=(
            ChunkHit("c1", f"{evil} is Lord of Winterfell.", 0.7, "vector",
                     components={"similarity": 0.7}),
            ChunkHit("c2", "Robert is king.", 0.5, "graph", path=(ned, rob_end)),
        ),
        timings={"anchors": 1e-4},
    )  # fmt: skip


def block(items: tuple[object, ...], dropped: tuple[object, ...] = ()) -> ContextBlock:
    return ContextBlock(text="- line\n- line", tokens=4, items=items, dropped=dropped, budget=40)


def test_the_model_layers_by_hop_and_marks_the_context_items() -> None:
    g = explain_graph(sample(), block((1, 3), dropped=(2,)))
    by_title = {n.title.split(" ", 1)[0] if n.rank else n.title: n for n in g.nodes}
    layer = {n.key: n.layer for n in g.nodes}
    assert [n.kind for n in g.nodes][:1] == ["query"] and g.nodes[0].layer == 0
    assert by_title["Ned Stark"].status == "anchor" and by_title["Ned Stark"].layer == 1
    assert by_title["Robert Baratheon"].layer == 2 and by_title["Cersei Lannister"].layer == 3
    items = [n for n in g.nodes if n.rank]
    assert {n.layer for n in items} == {4}
    status = {(n.kind, n.rank): n.status for n in items}
    assert status == {
        ("fact", 1): "context",
        ("fact", 2): "dropped",
        ("fact", 3): "context",
        ("chunk", 1): "ranked",  # plain ids mark facts and chunks, and c1 is not in the block
        ("chunk", 2): "ranked",
    }
    # Path edges run forward, one step per layer; a vector-only chunk hangs from the query.
    steps = [e for e in g.edges if e.label in ("ALLY \u2192", "SPOUSE \u2192")]
    assert len(steps) == 2 and all(layer[e.target] == layer[e.source] + 1 for e in steps)
    c1 = next(n.key for n in items if n.kind == "chunk" and n.rank == 1)
    assert any(e.source == "n0" and e.target == c1 and e.label == "vector" for e in g.edges)
    # Typed pairs mark entities too, and only the kind named.
    g2 = explain_graph(sample(), block((("entity", "robert"), ("chunk", "c1"), ("fact", "c2"))))
    st2 = {(n.kind, n.rank or n.title): n.status for n in g2.nodes}
    assert st2[("entity", "Robert Baratheon")] == "context"
    assert st2[("chunk", 1)] == "context" and st2[("chunk", 2)] == "ranked"
    assert explain_graph(sample()).has_context is False


def test_max_items_caps_the_picture_and_says_so() -> None:
    res = sample(n_facts=40)
    g = explain_graph(res, max_items=5)
    assert (g.shown, g.total) == (5, 42)
    assert "5 of 42 items drawn" in to_svg(res, max_items=5)
    assert "5 of 42 ranked items shown" in to_html(res, max_items=5)
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ParameterError, match="max_items"):
            explain_graph(res, max_items=bad)  # type: ignore[arg-type]


def test_svg_is_valid_xml_and_boxes_do_not_overlap() -> None:
    res = sample(n_facts=12)
    svg = to_svg(res, block((1,)))
    root = ET.fromstring(svg)
    ns = {"s": "http://www.w3.org/2000/svg"}
    nodes = root.findall(".//s:g[@class]", ns)
    drawn = [g for g in nodes if g.get("class", "").startswith("node ")]
    graph = explain_graph(res, block((1,)))
    assert len(drawn) == len(graph.nodes)
    assert len(root.findall(".//s:path[@marker-end]", ns)) == len(graph.edges)
    boxes, width, height = layout(graph)
    assert float(root.get("width", "0")) == pytest.approx(width, abs=0.1)
    for a in boxes.values():
        assert 0 <= a.x and a.x + a.w <= width and 0 <= a.y and a.y + a.h <= height
        for b in boxes.values():
            if a is not b:
                apart_x = a.x + a.w <= b.x or b.x + b.w <= a.x
                apart_y = a.y + a.h <= b.y or b.y + b.h <= a.y
                assert apart_x or apart_y, (a.node.title, b.node.title)


def test_hostile_names_stay_text_in_every_format() -> None:
    res = sample(evil=EVIL)
    svg = to_svg(res)
    root = ET.fromstring(svg)  # escaped, control characters removed: still XML
    texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert '<script>alert("x")</script>' in texts  # shown as text...
    assert "<script" not in svg and "\x00" not in svg  # ...never as markup
    page = to_html(res)
    assert "<script" not in page.lower() and "<b>of</b>" not in page
    assert "&lt;script&gt;" in page and "Lord &lt;b&gt;of&lt;/b&gt;" in page
    mermaid = to_mermaid(res)
    assert "<script" not in mermaid and "#60;script#62;" in mermaid
    dot = to_dot(res)
    assert '\\"x\\"' in dot and "\\\\N" in dot and "\x00" not in dot
    check_dot(dot)
    check_mermaid(mermaid)
    assert "alert" in explain(res)  # the text explanation still names it


def test_the_page_is_self_contained() -> None:
    res = sample()
    page = to_html(res, block((1, 2), dropped=(3,)))
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"https?://", page, re.I)  # no CDN, no namespace URL, no link
    assert not re.search(r"<(script|link|img|iframe|object)\b", page, re.I)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert page.count("<svg") == 1
    for needle in ("Why these results", "Ned Stark", "confidence 0.9", "in context",
                   "dropped (budget)", "Ned Stark -ALLY-&gt; Robert Baratheon", "- line\n- line",
                   "4 tokens (budget 40 tokens)"):  # fmt: skip
        assert needle in page, needle
    bare = to_html(res)
    assert "No context block was given" in bare and "in context</span>" not in bare


# DOT: node statements, edge statements, graph/node/edge defaults, rank groups; strings quoted.
_DOT_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_DOT_LINE = re.compile(
    r"^\s*(?:(?:graph|node|edge) \[.*\];|n\d+ \[.*\];|n\d+ -> n\d+(?: \[.*\])?;"
    r"|\{ rank=same;(?: n\d+;)+ \})$"
)


def check_dot(dot: str) -> None:
    lines = dot.strip().split("\n")
    assert lines[0] == "digraph explanation {" and lines[-1] == "}"
    declared, used = set(), set()
    for line in lines[1:-1]:
        bare = _DOT_STRING.sub("S", line)
        assert '"' not in bare and _DOT_LINE.match(bare), line
        if m := re.match(r"^\s*(n\d+) \[", bare):
            declared.add(m.group(1))
        if m := re.match(r"^\s*(n\d+) -> (n\d+)", bare):
            used.update(m.groups())
        assert bare.count("[") == bare.count("]")
    assert used <= declared


_MM_NODE = re.compile(
    r'^  (n\d+)(?:\(\["|\("|\[")([^"<>\[\]|]*)<br/>([^"<>\[\]|]*)(?:"\]\)|"\)|"\])$'
)
_MM_EDGE = re.compile(r'^  (n\d+) -->(?:\|"[^"|<>]*"\|)? (n\d+)$')
_MM_CLASS = re.compile(r"^  (?:classDef \w+ [\w:#.,\- ]+|class (?:n\d+,)*n\d+ \w+)$")


def check_mermaid(text: str) -> None:
    lines = text.strip().split("\n")
    assert lines[0] == "---" and lines[1].startswith("title: ") and lines[2] == "---"
    assert lines[3] == "flowchart LR"
    declared, used = set(), set()
    for line in lines[4:]:
        if m := _MM_NODE.match(line):
            declared.add(m.group(1))
        elif m := _MM_EDGE.match(line):
            used.update(m.groups())
        else:
            assert _MM_CLASS.match(line), line
    assert used <= declared and declared


def test_dot_and_mermaid_are_well_formed() -> None:
    res = sample(n_facts=8)
    ctx = block((1,), dropped=(2,))
    check_dot(to_dot(res, ctx))
    check_mermaid(to_mermaid(res, ctx))
    assert "class n" in to_mermaid(res, ctx) and "dropped" in to_mermaid(res, ctx)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from graphrecall.demo import demo

    path = tmp_path_factory.mktemp("explain") / "demo.sqlite"
    assert demo(out=io.StringIO(), db=str(path)) == 0
    return path


def test_query_writes_the_pictures(store: Path, tmp_path: Path) -> None:
    out = {fmt: tmp_path / f"why.{fmt}" for fmt in ("html", "svg", "dot", "mermaid")}
    args = ["query", str(store), "What is JACQ?", "--recipe", "spreading_activation"]
    args += ["--tenant", "alice", "--now", "1767225600", "--budget", "60"]
    for fmt, path in out.items():
        args += [f"--explain-{fmt}", str(path)]
    assert main(args) == 0
    page = out["html"].read_text(encoding="utf-8")
    assert "JACQ Project" in page and "in context" in page and "dropped (budget)" in page
    ET.fromstring(out["svg"].read_text(encoding="utf-8"))
    check_dot(out["dot"].read_text(encoding="utf-8"))
    check_mermaid(out["mermaid"].read_text(encoding="utf-8"))
    bad = ["query", str(store), "x", "--tenant", "alice", "--recipe", "spreading_activation"]
    assert main([*bad, "--explain-html", str(tmp_path / "missing" / "x.html")]) == 1


def test_every_demo_recipe_draws(store: Path) -> None:
    from graphrecall.demo import EXAMPLES
    from graphrecall.rag import GraphRAG

    rag = GraphRAG.from_sqlite(str(store))
    for recipe, tenant, question, context in EXAMPLES:
        res = rag.retrieve(question, recipe=recipe, tenant=tenant, now=1767225600, context=context)
        block = rag.context(res, budget=80)
        graph = explain_graph(res, block)
        assert graph.shown == min(len(res.facts) + len(res.chunks), 30), recipe
        assert any(n.status == "context" for n in graph.nodes), recipe
        ET.fromstring(to_svg(res, block))
        check_dot(to_dot(res, block))
        check_mermaid(to_mermaid(res, block))
        assert not re.search(r"https?://", to_html(res, block))

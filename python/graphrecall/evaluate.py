"""Compare recipes on a question set with gold passages: recall at k and latency.

:func:`compare` runs chosen recipes (graph recipes, the ``vector`` / ``bm25`` / ``hybrid``
baselines, and ``"auto"``: the router's choice per question) over the same questions, for
the same tenant, through :meth:`GraphRAG.retrieve`, and scores each ranking of passages
against the gold passages: ``R@k = |gold & top k| / |gold|``, averaged over the questions.
Latency is per single-question call (the best of ``repeat`` runs per question, averaged),
embedding excluded when ``query_vectors`` are given; ``graph_us`` is the recipe's ``graph``
stage alone where it has one. ``graphrecall eval`` is its command line
(:func:`add_parser` / :func:`run`).

Example:
    >>> from graphrecall import GraphRAG
    >>> from graphrecall.demo import demo_data, demo_tables
    >>> from graphrecall.evaluate import compare, format_table
    >>> rag = GraphRAG.from_tables(demo_tables(demo_data()), embedder=None)
    >>> rows = compare(rag, ["What does JACQ use?"], [["c_jacq"]], recipes=["auto", "bm25"],
    ...                tenant="alice")
    >>> rows[1].recall[2]
    100.0
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .errors import GraphRecallError, ParameterError

if TYPE_CHECKING:
    from .index import GraphIndex
    from .rag import GraphRAG

__all__ = ["AUTO", "EvalRow", "add_parser", "compare", "format_table", "recall_at", "run"]

#: The name :func:`compare` gives the router's choice (no recipe named).
AUTO = "auto"


@dataclass(frozen=True)
class EvalRow:
    """One recipe's scores on a question set.

    Attributes:
        recipe: The recipe's name, or ``"auto"`` for the router.
        questions: Questions scored.
        recall: Mean recall at each k, in percent (``{2: 61.0, 5: 80.5}``).
        us_per_query: Mean microseconds per single-question call (best of the repeats).
        graph_us_per_query: Mean microseconds of the ``graph`` stage (None without one).
        routed: For ``"auto"``, how many questions each recipe ran.
        fallbacks: Questions whose result reports a fallback.
    """

    recipe: str
    questions: int
    recall: Mapping[int, float]
    us_per_query: float
    graph_us_per_query: float | None
    routed: Mapping[str, int] = field(default_factory=dict)
    fallbacks: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The row as plain data (``R@k`` keys for the recalls)."""
        return {
            "recipe": self.recipe,
            "questions": self.questions,
            **{f"R@{k}": v for k, v in self.recall.items()},
            "us_per_query": self.us_per_query,
            "graph_us_per_query": self.graph_us_per_query,
            "routed": dict(self.routed),
            "fallbacks": self.fallbacks,
        }


def recall_at(
    ranked: Sequence[Sequence[Hashable]], gold: Sequence[Iterable[Hashable]], k: int
) -> float:
    """Mean recall at ``k`` in percent.

    Args:
        ranked: Per question, the ranked passage ids.
        gold: Per question, the gold passage ids (a question without any scores 0).
        k: The cut-off.

    Returns:
        The mean over questions of ``|top k & gold| / |gold|``, times 100.
    """
    if len(ranked) != len(gold):
        raise ParameterError(f"invalid parameter gold: {len(gold)} sets for {len(ranked)} rankings")
    if not ranked:
        return 0.0
    total = 0.0
    for r, g in zip(ranked, gold, strict=True):
        gs = set(g)
        if gs:
            total += len(set(list(r)[:k]) & gs) / len(gs)
    return 100.0 * total / len(ranked)


def compare(
    rag: GraphRAG | GraphIndex,
    questions: Sequence[str],
    gold: Sequence[Iterable[Hashable]],
    *,
    recipes: Sequence[str] = (AUTO, "ppr", "hybrid", "vector", "bm25"),
    ks: Sequence[int] = (2, 5),
    tenant: Hashable | None = None,
    now: int | None = None,
    query_vectors: npt.ArrayLike | None = None,
    repeat: int = 1,
) -> list[EvalRow]:
    """Run ``recipes`` over ``questions`` and score their passages against ``gold``.

    Args:
        rag: A :class:`~graphrecall.GraphRAG` (its router answers ``"auto"``) or a
            :class:`~graphrecall.index.GraphIndex` (wrapped without a cache).
        questions: The questions.
        gold: Per question, the ids of its gold passages (chunk ids).
        recipes: Recipe names, ``"auto"`` for the router's choice.
        ks: The cut-offs of recall.
        tenant: The tenant (may be omitted when the graph holds one).
        now: Unix seconds (default: the clock, once for the whole comparison).
        query_vectors: Pre-computed query embeddings (n, d): latency then excludes the
            embedder.
        repeat: Timed runs per question (the best counts).

    Returns:
        One :class:`EvalRow` per recipe, in the order given.

    Raises:
        ParameterError: Unknown recipe, mismatched lengths, bad ``ks`` or ``repeat``.
    """
    from .rag import GraphRAG
    from .recipes import get_recipe

    g = rag if isinstance(rag, GraphRAG) else GraphRAG(rag, cache=None)
    qs = list(questions)
    golds = [set(x) for x in gold]
    if len(golds) != len(qs):
        raise ParameterError(f"invalid parameter gold: {len(golds)} sets for {len(qs)} questions")
    kk = [int(k) for k in ks]
    if not kk or any(k < 1 for k in kk):
        raise ParameterError(f"invalid parameter ks: {list(ks)!r} (give positive integers)")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ParameterError(f"invalid parameter repeat: {repeat!r}")
    for name in recipes:
        if name != AUTO:
            get_recipe(name)
    qv = None if query_vectors is None else np.asarray(query_vectors, dtype=np.float32)
    if qv is not None and (qv.ndim != 2 or qv.shape[0] != len(qs)):
        raise ParameterError(
            f"invalid parameter query_vectors: shape {qv.shape} for {len(qs)} questions"
        )
    if now is None:
        now = int(time.time())
    rows = []
    for name in recipes:
        total = np.full(len(qs), np.inf)
        graph = np.full(len(qs), np.inf)
        ranked: list[list[Hashable]] = [[] for _ in qs]
        routed: Counter[str] = Counter()
        fallbacks = 0
        for i, q in enumerate(qs):
            vec = None if qv is None else qv[i]
            for _ in range(repeat):
                t0 = time.perf_counter()
                res = g.retrieve(
                    q,
                    recipe=None if name == AUTO else name,
                    tenant=tenant,
                    now=now,
                    query_vector=vec,
                    use_cache=False,
                )
                total[i] = min(total[i], time.perf_counter() - t0)
                graph[i] = min(graph[i], res.timings.get("graph", math.inf))
            ranked[i] = [c.id for c in res.chunks]
            routed[res.recipe] += 1
            fallbacks += res.fallback is not None
        has_graph = bool(np.isfinite(graph).all()) and len(qs) > 0
        rows.append(
            EvalRow(
                recipe=name,
                questions=len(qs),
                recall={k: recall_at(ranked, golds, k) for k in kk},
                us_per_query=float(np.mean(total)) * 1e6 if len(qs) else 0.0,
                graph_us_per_query=float(np.mean(graph)) * 1e6 if has_graph else None,
                routed=dict(routed) if name == AUTO else {},
                fallbacks=fallbacks,
            )
        )
    return rows


def format_table(rows: Sequence[EvalRow], *, title: str | None = None) -> str:
    """The rows as a Markdown table (recall columns, latency, what ``auto`` chose).

    Args:
        rows: What :func:`compare` returned.
        title: A first column's value (e.g. the data set's name), omitted when None.

    Returns:
        The table.
    """
    ks = sorted({k for r in rows for k in r.recall})
    head = ["recipe", *[f"R@{k}" for k in ks], "µs / query", "graph step µs / query", "notes"]
    if title is not None:
        head.insert(0, "dataset")
    text_cols = 1 if title is None else 2
    sep = ["---"] * text_cols + ["---:"] * (len(head) - text_cols - 1) + ["---"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(sep) + "|"]
    for r in rows:
        notes = []
        if r.routed:
            notes.append("routed: " + ", ".join(f"{k} {v}" for k, v in sorted(r.routed.items())))
        if r.fallbacks:
            notes.append(f"{r.fallbacks} fallbacks")
        gs = "" if r.graph_us_per_query is None else f"{r.graph_us_per_query:.0f}"
        cells = [
            r.recipe,
            *[f"{r.recall.get(k, 0.0):.1f}" for k in ks],
            f"{r.us_per_query:.0f}",
            gs,
            "; ".join(notes),
        ]
        if title is not None:
            cells.insert(0, title)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------ command line


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``graphrecall eval`` on the CLI's subparsers.

    Args:
        sub: The ``add_subparsers()`` object of the ``graphrecall`` parser.

    Returns:
        The subcommand's parser.
    """
    p: argparse.ArgumentParser = sub.add_parser(
        "eval",
        help="recall at k and latency of chosen recipes on questions with gold passages",
        description=(
            "Runs recipes over a question set and prints R@k and latency per recipe. "
            "QUESTIONS is a JSON list or JSON-lines file of objects "
            '{"question": str, "gold": [chunk ids]}.'
        ),
    )
    p.add_argument("store", help="a graphrecall SQLite store or a saved index directory")
    p.add_argument("questions", help="JSON / JSON-lines file of {question, gold}")
    p.add_argument(
        "--recipes",
        default=f"{AUTO},ppr,hybrid,vector,bm25",
        help="comma-separated recipe names; 'auto' is the router (default: %(default)s)",
    )
    p.add_argument("--k", default="2,5", help="comma-separated cut-offs (default: %(default)s)")
    p.add_argument("--tenant", help="the tenant (needed when the store holds several)")
    p.add_argument("--now", type=int, help="unix seconds to score at (default: the clock)")
    p.add_argument("--repeat", type=int, default=1, help="timed runs per question (best counts)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--no-embedder", action="store_true", help="use stored vectors only (no model)")
    return p


def load_questions(path: str | Path) -> tuple[list[str], list[list[Hashable]]]:
    """Questions and gold passage ids from a JSON list or JSON-lines file.

    Raises:
        ParameterError: The file is not a list of ``{"question", "gold"}`` objects.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        items = json.loads(text)
    except json.JSONDecodeError:
        try:
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise ParameterError(f"{path}: neither JSON nor JSON lines ({exc})") from exc
    if not isinstance(items, list):
        raise ParameterError(f"{path}: expected a list of {{question, gold}} objects")
    qs: list[str] = []
    gold: list[list[Hashable]] = []
    for i, it in enumerate(items):
        if (
            not isinstance(it, dict)
            or not isinstance(it.get("question"), str)
            or not isinstance(it.get("gold"), list)
        ):
            raise ParameterError(
                f"{path}: item {i} is not an object with a str 'question' and a list 'gold'"
            )
        qs.append(it["question"])
        gold.append([g for g in it["gold"] if isinstance(g, (str, int))])
    return qs, gold


def run(args: argparse.Namespace, out: Any = None) -> int:
    """Run ``graphrecall eval``; returns the exit code (0 ok, 1 error)."""
    from .index_io import is_saved_index
    from .rag import GraphRAG

    out = out if out is not None else sys.stdout
    try:
        saved = Path(args.store).is_dir() and is_saved_index(args.store)
        if not saved and not Path(args.store).is_file():
            raise ParameterError(
                f"{args.store!r} is neither a graphrecall SQLite store nor a saved index"
            )
        embedder = None if args.no_embedder else "default"
        rag = (
            GraphRAG.load(args.store, embedder=embedder, cache=None)
            if saved
            else GraphRAG.from_sqlite(args.store, embedder=embedder, cache=None)
        )
        qs, gold = load_questions(args.questions)
        recipes = [r.strip() for r in args.recipes.split(",") if r.strip()]
        try:
            ks = [int(k) for k in args.k.split(",") if k.strip()]
        except ValueError as exc:
            raise ParameterError(f"invalid --k {args.k!r}: give integers") from exc
        tenant: Any = args.tenant
        if tenant is not None and tenant.isdigit() and tenant not in rag.index.graph.tenants.names:
            tenant = int(tenant)
        rows = compare(
            rag, qs, gold, recipes=recipes, ks=ks, tenant=tenant, now=args.now, repeat=args.repeat
        )
    except (GraphRecallError, ValueError, KeyError, OSError) as exc:
        print(f"graphrecall eval: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=1), file=out)
    else:
        print(format_table(rows), file=out)
    return 0

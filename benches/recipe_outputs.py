"""Recipe outputs on the benchmark index, as digests: the check that a refactor changed nothing.

Usage::

    python benches/recipe_outputs.py --out /tmp/before.json          # record
    python benches/recipe_outputs.py --compare /tmp/before.json      # exit 1 on any change

Builds ``bench_recipes.build``'s index (default 100k entities, the same generator as the
latency benchmark), runs every recipe on the first ``--queries`` queries one at a time and as
one batch, plus a few non-default parameter sets, and records a SHA-256 of each result's
``to_dict()`` with the timings removed (JSON, sorted keys, floats by ``repr``). ``--compare``
reports every (recipe, variant, query) whose digest differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import bench_recipes  # noqa: E402
import workload  # noqa: E402

#: Non-default parameter sets per recipe, so that more than the default paths are compared.
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "spreading_activation": [{"max_hops": 1}, {"direction": "both", "top_k": 20}],
    "chunk_boost": [{"max_hops": 2}, {"expand_graph": False}],
    "routed_hybrid": [{"limit": 5}],
    "hybrid_expand": [{"use_graph": False}, {"k": 3}],
    "graph_recall": [{"recall_limit": 20, "dedupe": "fact"}],
    "ppr": [{"epsilon": None}, {"damping": 0.85}],
}


#: Fields of ``to_dict()`` left out of the digests (``--without``), besides the timings.
WITHOUT: set[str] = set()


def digest(result: Any) -> str:
    """SHA-256 of a result's ``to_dict()`` without its timings (nor the ``--without``
    fields)."""
    d = result.to_dict()
    for name in ("timings", *WITHOUT):
        d.pop(name, None)
    text = json.dumps(d, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def run(n_entities: int, n_queries: int, seed: int) -> dict[str, str]:
    """Every recipe's digests on the benchmark index, keyed ``recipe|variant|query``."""
    from graphrecall.recipes import RECIPES

    index, queries, _ = bench_recipes.build(n_entities, seed)
    queries = queries[:n_queries]
    out: dict[str, str] = {}
    for name, fn in RECIPES.items():
        base: dict[str, Any] = {"now": workload.NOW}
        if name == "routed_hybrid":
            base["context"] = {"goal_id": None}
        for vi, extra in enumerate([{}, *VARIANTS.get(name, [])]):
            kw = {**base, **extra}
            for qi, (text, t, v) in enumerate(queries):
                res = fn(index, [text], tenant=t, query_vectors=v[None, :], **kw)
                out[f"{name}|{vi}|{qi}"] = digest(res[0])
            # One batch per tenant of the first queries: the batch path must agree too.
            by_tenant: dict[int, list[int]] = {}
            for qi, (_, t, _) in enumerate(queries):
                by_tenant.setdefault(t, []).append(qi)
            for t, qis in sorted(by_tenant.items()):
                texts = [queries[q][0] for q in qis]
                vecs = np.stack([queries[q][2] for q in qis])
                for qi, res in zip(
                    qis, fn(index, texts, tenant=t, query_vectors=vecs, **kw), strict=True
                ):
                    out[f"{name}|{vi}|batch{qi}"] = digest(res)
        print(f"  {name}: done", file=sys.stderr)
    return out


def main() -> int:
    """Records or compares the digests; exit status 1 when any differs."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", type=Path)
    ap.add_argument(
        "--without",
        action="append",
        default=[],
        help="leave this result field out of the digests (e.g. entities: a change that is "
        "meant to alter only that field); repeatable",
    )
    args = ap.parse_args()
    WITHOUT.update(args.without)
    got = run(args.entities, args.queries, args.seed)
    if args.out:
        args.out.write_text(json.dumps(got, indent=0, sort_keys=True))
    if args.compare:
        want = json.loads(args.compare.read_text())
        diff = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
        print(f"{len(got)} runs, {len(diff)} differ", file=sys.stderr)
        for k in diff[:30]:
            print(f"  {k}: {want.get(k)} -> {got.get(k)}", file=sys.stderr)
        return 1 if diff else 0
    print(f"{len(got)} runs recorded", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

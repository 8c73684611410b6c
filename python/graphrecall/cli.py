"""Command line: ``graphrecall demo``, ``graphrecall index`` and ``graphrecall query``.

* ``demo``: every recipe on the packaged demo graph stored in embedded SQLite
  (:mod:`graphrecall.demo`).
* ``index``: read a store (SQLite, DuckDB, Parquet, PostgreSQL), check it, write a snapshot or
  a SQLite store (:mod:`graphrecall.indexer`).
* ``query``: answer a question from a graphrecall SQLite store or a saved index (no
  embedding, no HNSW build) with a recipe (or the router) and print the context block, the
  explanation or JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from . import __version__
from .demo import demo, demo_data, demo_tables

__all__ = ["demo", "demo_data", "demo_tables", "main", "query"]


def query(args: argparse.Namespace, out: Any = None) -> int:
    """Run ``graphrecall query``; returns the exit code (0 ok, 1 error)."""
    from .errors import GraphRecallError
    from .rag import GraphRAG

    out = out if out is not None else sys.stdout
    from .recipes import RECIPES

    if args.recipe is not None and args.recipe not in RECIPES:
        print(
            f"graphrecall query: unknown recipe {args.recipe!r}; known: {sorted(RECIPES)}",
            file=sys.stderr,
        )
        return 1
    from .index_io import is_saved_index

    saved = os.path.isdir(args.store) and is_saved_index(args.store)
    if not saved and not os.path.isfile(args.store):
        print(
            f"graphrecall query: {args.store!r} is neither a graphrecall SQLite store nor a "
            "saved index (make one with `graphrecall index SOURCE OUT --to index` or "
            "`--to sqlite`)",
            file=sys.stderr,
        )
        return 1
    try:
        t0 = time.perf_counter()
        embedder = None if args.no_embedder else "default"
        rag = (
            GraphRAG.load(args.store, embedder=embedder)
            if saved
            else GraphRAG.from_sqlite(args.store, embedder=embedder)
        )
        load_s = time.perf_counter() - t0
        tenant: Any = args.tenant
        if tenant is not None and tenant.isdigit() and tenant not in rag.index.graph.tenants.names:
            tenant = int(tenant)
        context = json.loads(args.context) if args.context else None
        res = rag.retrieve(
            args.question,
            recipe=args.recipe,
            tenant=tenant,
            now=args.now,
            context=context,
            use_cache=False,
        )
        from .explain import files as explain_files

        if explain_files.requested(args):
            block = rag.context(res, format=args.format, budget=args.budget)
            explain_files.write(args, res, block)
        if args.json:
            print(json.dumps(res.to_dict(), default=str, ensure_ascii=False, indent=1), file=out)
        elif args.explain:
            print(rag.explain(res), file=out)
        else:
            block = rag.context(res, format=args.format, budget=args.budget)
            print(block.text, file=out)
            timings = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in res.timings.items())
            print(
                f"\n[{res.recipe}; {block.tokens} tokens; "
                f"index loaded in {load_s:.2f} s; {timings}]",
                file=sys.stderr,
            )
    except (GraphRecallError, ValueError, KeyError, OSError) as exc:
        print(f"graphrecall query: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``graphrecall`` command."""
    parser = argparse.ArgumentParser(
        prog="graphrecall", description="Graph-RAG retrieval in microseconds"
    )
    parser.add_argument("--version", action="version", version=f"graphrecall {__version__}")
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("demo", help="store the packaged demo graph in SQLite and query it")
    d.add_argument("--db", help="keep the SQLite file at this path (default: a temporary file)")
    from . import indexer
    from .context import FORMATS

    ix = sub.add_parser(
        "index",
        help="read a store, check it, write a snapshot, a SQLite store or a saved index",
        description=indexer.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    indexer.add_arguments(ix)
    qp = sub.add_parser(
        "query", help="answer a question from a graphrecall SQLite store or saved index"
    )
    qp.add_argument(
        "store",
        help="a graphrecall SQLite store or a saved index directory "
        "(see `graphrecall index --to sqlite|index`)",
    )
    qp.add_argument("question")
    qp.add_argument("--recipe", help="a recipe name (default: the router chooses)")
    qp.add_argument("--tenant", help="the tenant (needed when the store holds several)")
    qp.add_argument("--now", type=int, help="unix seconds to score at (default: the clock)")
    qp.add_argument(
        "--context", help='routing / filter context as JSON, e.g. \'{"goal_id": "g1"}\''
    )
    qp.add_argument(
        "--format", choices=FORMATS, help="context block format (default: the recipe's)"
    )
    qp.add_argument("--budget", type=int, default=500, help="token budget of the block (500)")
    qp.add_argument("--json", action="store_true", help="print the whole result as JSON")
    qp.add_argument("--explain", action="store_true", help="print paths and score components")
    qp.add_argument("--no-embedder", action="store_true", help="use stored vectors only (no model)")
    from . import evaluate
    from .explain import files as explain_files
    from .integrations import mcp_server
    from .service import cli as service_cli

    explain_files.add_arguments(qp)
    mcp_server.add_parser(sub)
    evaluate.add_parser(sub)
    service_cli.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "mcp":
        return mcp_server.run(args)
    if args.command == "eval":
        return evaluate.run(args)
    if args.command == "serve":
        return service_cli.run(args)
    if args.command == "index":
        return indexer.run(args)
    if args.command == "query":
        return query(args)
    if args.command == "demo":
        try:
            return demo(db=args.db)
        except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    parser.print_help()
    return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

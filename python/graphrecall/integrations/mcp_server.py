"""``graphrecall mcp INDEX``: a Model Context Protocol server over a saved index or a SQLite
store (``pip install graphrecall[mcp]``, the official ``mcp`` SDK).

Three tools, each with a typed input schema (recipe names as an enum, bounds on ``k`` and
the budget) and, for the first two, a typed output schema:

* ``retrieve``: the ranked facts and chunks of one query, each with its score and
  provenance (see :class:`graphrecall.integrations.items.Item`);
* ``context``: the LLM-ready context block of one query within a token budget;
* ``explain``: the paths and score components of every item, as text.

Transports: stdio (the default, for agents that spawn the server) and streamable HTTP
(``--transport http``, bound to 127.0.0.1 unless ``--host`` says otherwise). ``--tenant``
pins the server to one tenant: calls may omit it, and a call naming another is refused.
Queries run through :meth:`GraphRAG.aretrieve`, so the server's event loop never blocks
on one. Errors (unknown tenant or recipe, bad parameters) come back as tool errors whose
text starts with the exception's class name.

Example:
    $ graphrecall mcp my-index --tenant stark              # stdio
    $ graphrecall mcp my-index --transport http --port 8765  # http://127.0.0.1:8765/mcp
"""

import argparse
import os
import sys
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from ..errors import GraphRecallError, ParameterError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..rag import GraphRAG
    from ..recipes import RetrievalResult

__all__ = ["add_parser", "build_server", "open_rag", "run"]

#: The most items ``retrieve`` returns and the largest context budget a call may ask for.
MAX_K = 1000
MAX_BUDGET = 100_000

Tenant = str | int


def open_rag(path: "str | os.PathLike[str]", *, embedder: str | None = "default") -> "GraphRAG":
    """A :class:`GraphRAG` over a saved index directory or a graphrecall SQLite store.

    Raises:
        ParameterError: ``path`` is neither.
    """
    from ..index_io import is_saved_index
    from ..rag import GraphRAG

    if os.path.isdir(path) and is_saved_index(path):
        return GraphRAG.load(path, embedder=embedder)
    if os.path.isfile(path):
        return GraphRAG.from_sqlite(path, embedder=embedder)
    raise ParameterError(
        f"invalid parameter index: {os.fspath(path)!r} is neither a saved index nor a "
        "graphrecall SQLite store (make one with `graphrecall index SOURCE OUT --to index`)"
    )


def build_server(
    rag: "GraphRAG", *, tenant: Hashable | None = None, name: str = "graphrecall"
) -> "MCPServer":
    """An MCP server exposing ``retrieve``, ``context`` and ``explain`` over ``rag``.

    Args:
        rag: The retrieval surface the tools query.
        tenant: Pin the server to this tenant (calls may omit it; others are refused).
        name: The server's name in the MCP handshake.
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import BaseModel, Field, WithJsonSchema

    from .. import __version__
    from ..context import FORMATS
    from ..recipes import list_recipe_names
    from .items import KINDS, result_items

    names = list_recipe_names()
    recipe_schema = {
        "anyOf": [{"type": "string", "enum": names}, {"type": "null"}],
        "default": None,
        "description": "The recipe to run; null lets the router choose per query.",
    }
    Recipe = Annotated[str | None, WithJsonSchema(recipe_schema)]
    TenantArg = Annotated[
        Tenant | None,
        Field(
            description="The tenant to answer in"
            + (f" (this server is pinned to {tenant!r})" if tenant is not None else "")
            + "; may be omitted when the graph holds one."
        ),
    ]
    Query = Annotated[str, Field(min_length=1, description="The question.")]
    Now = Annotated[
        int | None, Field(ge=0, description="Unix seconds to score at; null: the clock.")
    ]
    Params = Annotated[
        dict[str, Any] | None,
        Field(description='The recipe\'s parameters by name, e.g. {"max_hops": 2}.'),
    ]
    Context = Annotated[
        dict[str, Any] | None,
        Field(description='Routing / filter context, e.g. {"goal_id": "g1"}.'),
    ]

    class ItemOut(BaseModel):
        text: str = Field(description="The passage, or the fact as a sentence.")
        score: float
        metadata: dict[str, Any] = Field(
            description="recipe, query, tenant, kind, id, rank, score, components, path, "
            "path_text; facts: subject, predicate, object, confidence, hop, anchor; "
            "chunks: source, tier."
        )

    class RetrieveOut(BaseModel):
        recipe: str
        query: str
        tenant: Tenant | None
        items: list[ItemOut]

    class ContextOut(BaseModel):
        recipe: str
        text: str = Field(description="The context block.")
        tokens: int = Field(description="Its length in tokens.")

    server: MCPServer = MCPServer(
        name,
        version=__version__,
        instructions="Graph-RAG retrieval over a knowledge graph: `retrieve` ranked facts and "
        "passages with provenance, a `context` block for a prompt, or `explain` a result.",
    )
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    async def run_query(
        query: str,
        tenant_arg: Tenant | None,
        recipe: str | None,
        now: int | None,
        params: Mapping[str, Any] | None,
        context: Mapping[str, Any] | None,
    ) -> "RetrievalResult":
        if tenant is not None and tenant_arg is not None and tenant_arg != tenant:
            raise ToolError(
                f"UnknownTenantError: this server answers for tenant {tenant!r} only, "
                f"not {tenant_arg!r}"
            )
        try:
            return await rag.aretrieve(
                query,
                recipe=recipe,
                tenant=tenant if tenant is not None else tenant_arg,
                now=now,
                context=context,
                **dict(params or {}),
            )
        except (GraphRecallError, ValueError, KeyError, TypeError) as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    @server.tool(annotations=read_only, structured_output=True)
    async def retrieve(
        query: Query,
        tenant: TenantArg = None,
        recipe: Recipe = None,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="At most this many items.")] = 10,
        kinds: Annotated[
            tuple[Literal["fact", "chunk"], ...],
            Field(min_length=1, description="Which hits to return (facts first)."),
        ] = KINDS,
        now: Now = None,
        params: Params = None,
        context: Context = None,
    ) -> RetrieveOut:
        """Ranked facts and passages for a question, each with its score and provenance
        (recipe, kind, id, score components, the graph path from the anchor entity)."""
        res = await run_query(query, tenant, recipe, now, params, context)
        items = result_items(res, kinds=kinds, k=k)
        return RetrieveOut(
            recipe=res.recipe,
            query=res.query,
            tenant=_json_tenant(res.tenant),
            items=[ItemOut(text=i.text, score=i.score, metadata=i.metadata) for i in items],
        )

    @server.tool(annotations=read_only, structured_output=True)
    async def context(
        query: Query,
        tenant: TenantArg = None,
        recipe: Recipe = None,
        budget: Annotated[
            int, Field(ge=1, le=MAX_BUDGET, description="Token budget of the block.")
        ] = 500,
        format: Annotated[
            str | None,
            WithJsonSchema(
                {
                    "anyOf": [{"type": "string", "enum": list(FORMATS)}, {"type": "null"}],
                    "default": None,
                    "description": "The block's format; null: the recipe's own.",
                }
            ),
        ] = None,
        now: Now = None,
        params: Params = None,
        context: Context = None,
    ) -> ContextOut:
        """The context block for a question, ready to paste into a prompt, packed by score
        within a token budget (the recipe's own format by default)."""
        if format is not None and format not in FORMATS:
            raise ToolError(f"ParameterError: invalid parameter format: {format!r}")
        res = await run_query(query, tenant, recipe, now, params, context)
        block = rag.context(res, format=format, budget=budget)
        return ContextOut(recipe=res.recipe, text=block.text, tokens=block.tokens)

    @server.tool(annotations=read_only)
    async def explain(
        query: Query,
        tenant: TenantArg = None,
        recipe: Recipe = None,
        now: Now = None,
        params: Params = None,
        context: Context = None,
    ) -> str:
        """Why each item was chosen: the anchors, and for every item its score components
        and the graph path that reached it."""
        res = await run_query(query, tenant, recipe, now, params, context)
        return rag.explain(res)

    return server


def _json_tenant(t: Hashable | None) -> Tenant | None:
    """A tenant as a JSON value (str or int; anything else as its str)."""
    return t if t is None or isinstance(t, (str, int)) else str(t)


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register ``graphrecall mcp`` on the command's subparsers."""
    p = sub.add_parser(
        "mcp",
        help="serve an index to agents over the Model Context Protocol (stdio or HTTP)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("index", help="a saved index directory or a graphrecall SQLite store")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP address (127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (8000; 0: any free)")
    p.add_argument("--path", default="/mcp", help="HTTP endpoint path (/mcp)")
    p.add_argument("--tenant", help="pin the server to this tenant")
    p.add_argument("--no-embedder", action="store_true", help="use stored vectors only")


def run(args: argparse.Namespace) -> int:
    """Run ``graphrecall mcp``; returns the exit code (0 ok, 1 error)."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        print(
            "graphrecall mcp: the MCP SDK is not installed (pip install 'graphrecall[mcp]')",
            file=sys.stderr,
        )
        return 1
    try:
        rag = open_rag(args.index, embedder=None if args.no_embedder else "default")
        tenant: Hashable | None = args.tenant
        names = rag.index.graph.tenants.names
        if args.tenant is not None and args.tenant.isdigit() and args.tenant not in names:
            tenant = int(args.tenant)
        server = build_server(rag, tenant=tenant)
    except (GraphRecallError, ValueError, KeyError) as exc:
        print(f"graphrecall mcp: {exc}", file=sys.stderr)
        return 1
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run(
            "streamable-http", host=args.host, port=args.port, streamable_http_path=args.path
        )
    return 0

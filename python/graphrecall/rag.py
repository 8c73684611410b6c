"""The product surface: :class:`GraphRAG`, a query string in, ranked facts / chunks and an
LLM-ready context block out.

It ties the pieces together: an optional router picks the recipe (seeds 002 / 004), a TTL
cache answers repeated questions (seed 000: 60 s), the recipe runs (one embedding call and
one native call per batch), every stage is timed and logged with seed 001's fan-out and
boost statistics, queries slower than a threshold are logged as warnings (seed 002: 200 ms),
and the result renders as the recipe's own context block within a token budget.

Example:
    >>> from graphrecall import GraphRAG
    >>> rag = GraphRAG.demo()  # doctest: +SKIP
    >>> res = rag.retrieve("What does JACQ use?", recipe="spreading_activation",
    ...                    tenant="alice", now=1767225600)  # doctest: +SKIP
    >>> print(rag.context(res).text)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict, TypeVar

import numpy as np
import numpy.typing as npt

from .cache import ResultCache
from .embed import Embedder
from .errors import ParameterError, UnknownTenantError
from .explain import explain
from .index import GraphIndex
from .recipes import RecipeOverrides, RecipeParams, RetrievalResult, get_recipe
from .recipes.stages import resolve_params
from .tables import GraphTables, OnBad

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .context import ContextBlock, TokenCounter
    from .graph import KnowledgeGraph
    from .router import Route, Router

__all__ = ["GraphRAG", "GraphRAGOptions"]

log = logging.getLogger("graphrecall")

_R = TypeVar("_R")

#: The default longest query :class:`GraphRAG` accepts, in characters.
MAX_QUERY_CHARS = 10_000


class GraphRAGOptions(TypedDict, total=False):
    """The keyword options of :class:`GraphRAG` (what its constructors pass on)."""

    router: Router | None
    cache: ResultCache | str | None
    slow_query_ms: float
    token_counter: TokenCounter | None
    max_query_chars: int


class GraphRAG:
    """Graph-RAG retrieval over a :class:`~graphrecall.index.GraphIndex`.

    Args:
        index: The retrieval index.
        router: Picks the recipe when ``retrieve`` is called without one (default: per
            tenant, an :class:`~graphrecall.router.IndexRouter` over what that tenant's data
            holds, whose seed router is a :class:`~graphrecall.router.HeuristicRouter` with
            that tenant's entity names as the "known entity" test, seed 004; rebuilt when
            the index is replaced).
        cache: A :class:`~graphrecall.cache.ResultCache` (default: 60 s TTL, seed 000), or
            None for no cache.
        slow_query_ms: Log a warning for queries slower than this (seed 002: 200 ms).
        token_counter: Counts tokens for context budgets (default: the embedder's
            tokenizer when it is the default model, else a conservative estimate).
        max_query_chars: Longer queries are a ``ParameterError`` (a question is not a
            document: the embedder reads only its first window anyway).
    """

    def __init__(
        self,
        index: GraphIndex,
        *,
        router: Router | None = None,
        cache: ResultCache | str | None = "default",
        slow_query_ms: float = 200.0,
        token_counter: TokenCounter | None = None,
        max_query_chars: int = MAX_QUERY_CHARS,
    ):
        self.index = index
        self.router = router
        if isinstance(cache, str):
            if cache != "default":
                raise ParameterError(
                    f"invalid parameter cache: {cache!r} (give 'default', None or a ResultCache)"
                )
            self.cache: ResultCache | None = ResultCache(ttl=60.0)
        else:
            self.cache = cache
        if not isinstance(slow_query_ms, (int, float)) or not slow_query_ms > 0:
            raise ParameterError(f"invalid parameter slow_query_ms: {slow_query_ms!r}")
        self.slow_query_ms = float(slow_query_ms)
        if type(max_query_chars) is not int or max_query_chars < 1:
            raise ParameterError(f"invalid parameter max_query_chars: {max_query_chars!r}")
        self.max_query_chars = max_query_chars
        self.generation = 0
        self._counter = token_counter
        #: Default routers per tenant code, of the current index (None: none built yet).
        self._router_cache: dict[int, Router] | None = None

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_tables(
        cls,
        tables: GraphTables,
        *,
        embedder: Embedder | str | None = "default",
        on_bad: OnBad = "raise",
        **kwargs: Unpack[GraphRAGOptions],
    ) -> GraphRAG:
        """Build the index from tables (see :meth:`GraphIndex.build`) and wrap it."""
        return cls(GraphIndex.build(tables, embedder=embedder, on_bad=on_bad), **kwargs)

    @classmethod
    def from_sqlite(
        cls,
        path: str | os.PathLike[str],
        *,
        embedder: Embedder | str | None = "default",
        **kwargs: Unpack[GraphRAGOptions],
    ) -> GraphRAG:
        """Open a graphrecall SQLite store and build the index from it (stored
        embeddings are used as they are)."""
        from .storage import SQLiteStore

        with SQLiteStore.open(path) as store:
            tables = store.read()
        return cls(GraphIndex.build(tables, embedder=embedder), **kwargs)

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        *,
        embedder: Embedder | str | None = "default",
        verify: bool = True,
        **kwargs: Unpack[GraphRAGOptions],
    ) -> GraphRAG:
        """Open an index saved with :meth:`save` (no embedding, no HNSW build)."""
        return cls(GraphIndex.load(directory, embedder=embedder, verify=verify), **kwargs)

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Save the index for a fast cold start (see :meth:`GraphIndex.save`)."""
        return self.index.save(directory)

    def update(
        self, tables: GraphTables, *, graph: KnowledgeGraph | None = None, checked: bool = False
    ) -> GraphIndex:
        """Swap in an index of updated tables (e.g. ``LiveGraph.tables`` after an update),
        built incrementally from the current one: unchanged entities and chunks keep their
        vectors, and each tenant's vector sub-index is kept, extended with new rows or
        rebuilt only where its rows changed (``GraphIndex.build(previous=...)``). Cached
        results are never served again.

        Args:
            tables: The whole graph after the update.
            graph: The graph of ``tables``, already compiled (``LiveGraph.current()``'s
                graph with its tables); None compiles it.
            checked: The tables already went through :meth:`GraphTables.check`.

        Returns:
            The new index (its ``reused`` says what was kept).

        Example:
            >>> cur = live.current()  # doctest: +SKIP
            >>> rag.update(cur.tables, graph=cur.graph, checked=True)  # doctest: +SKIP
        """
        index = GraphIndex.build(
            tables,
            graph=graph,
            embedder=self.index.embedder,
            checked=checked,
            vector_backend=self.index.vector_backend,
            exact_below=self.index.exact_below,
            previous=self.index,
        )
        self.replace_index(index)
        return index

    def replace_index(self, index: GraphIndex) -> None:
        """Swap in a rebuilt index (after an update): cached results are never served again."""
        self.index = index
        self.generation += 1
        self._router_cache = None
        if self.cache is not None:
            self.cache.clear()

    # ------------------------------------------------------------------ retrieval

    def _router(self, tenant: Hashable | None = None) -> Router:
        """The router of ``tenant``'s queries: the caller's, else the default one of the
        current index (an :class:`~graphrecall.router.IndexRouter` over that tenant's data,
        its seed router recognising that tenant's entity names), built on first use and
        dropped when the index is replaced."""
        if self.router is not None:
            return self.router
        code = self.index.tenant_code(tenant)
        routers = self._router_cache
        if routers is None:
            routers = self._router_cache = {}
        got = routers.get(code)
        if got is None:
            got = routers[code] = _default_router(self.index, code)
        return got

    def retrieve(
        self,
        query: str,
        *,
        recipe: str | RecipeParams | None = None,
        tenant: Hashable | None = None,
        now: int | None = None,
        context: Mapping[str, Any] | None = None,
        query_vector: npt.ArrayLike | None = None,
        use_cache: bool = True,
        **params: Unpack[RecipeOverrides],
    ) -> RetrievalResult:
        """Retrieve for one query (see :meth:`retrieve_batch`).

        Example:
            >>> from graphrecall.recipes import ChunkBoost
            >>> res = rag.retrieve("Who is Ada?", recipe=ChunkBoost(k=10))  # doctest: +SKIP
            >>> res = rag.retrieve("Who is Ada?", recipe="chunk_boost", k=10)  # doctest: +SKIP
        """
        if not isinstance(query, str):
            raise ParameterError(f"invalid parameter query: {type(query).__name__} is not a str")
        qv = (
            None
            if query_vector is None
            else np.asarray(query_vector, dtype=np.float32).reshape(1, -1)
        )
        return self.retrieve_batch(
            [query],
            recipe=recipe,
            tenant=tenant,
            now=now,
            context=context,
            query_vectors=qv,
            use_cache=use_cache,
            **params,
        )[0]

    def retrieve_batch(
        self,
        queries: Sequence[str],
        *,
        recipe: str | RecipeParams | None = None,
        tenant: Hashable | None = None,
        now: int | None = None,
        context: Mapping[str, Any] | None = None,
        query_vectors: npt.ArrayLike | None = None,
        use_cache: bool = True,
        **params: Unpack[RecipeOverrides],
    ) -> list[RetrievalResult]:
        """Run a recipe on a batch of queries: one embedding call, one native call per stage.

        Args:
            queries: Query strings.
            recipe: A parameter set (``ChunkBoost(k=10)``: the recipe it belongs to, with
                those parameters), a registered name (:func:`graphrecall.recipes.
                list_recipe_names`), or None to let the router choose per query.
            tenant: The tenant (may be omitted when the graph holds one).
            now: Unix seconds (scoring by age, expiry, time windows); default: the clock.
            context: Caller context for routing and the recipes that take it.
            query_vectors: Pre-computed query embeddings (n, d).
            use_cache: Serve / store results in the TTL cache (the key holds tenant, query,
                recipe, params and context, not ``now``: the TTL bounds staleness).
            **params: Parameters of the recipe by name (overriding the set's).

        Returns:
            One :class:`~graphrecall.recipes.RetrievalResult` per query (immutable: a
            cached result is shared).

        Raises:
            ParameterError: An unknown recipe or parameter, or a bad value.
        """
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise ParameterError(
                "invalid parameter queries: give a sequence of str (retrieve() takes one)"
            )
        qs = list(queries)
        for i, q in enumerate(qs):
            if isinstance(q, str) and len(q) > self.max_query_chars:
                raise ParameterError(
                    f"invalid parameter queries: query {i} has {len(q):,} characters, more "
                    f"than max_query_chars = {self.max_query_chars:,}"
                )
        vectors = _query_vectors(query_vectors, len(qs))
        t_start = time.perf_counter()
        if now is None:
            now = int(time.time())
        # With no recipe named, the router's known-entity test recognises each query's
        # names and the recipe it picks reuses them (``NameIndex.sharing``).
        with self.index.names.sharing() if recipe is None else contextlib.nullcontext():
            routes: list[Route | None] = [None] * len(qs)
            given: RecipeParams | None = None
            if recipe is None:
                router = self._router(tenant)
                routed = [router.route(q, context) for q in qs]
                routes = list(routed)
                names = [r.recipe for r in routed]
            elif isinstance(recipe, str):
                names = [get_recipe(recipe).name] * len(qs)
            else:
                given = recipe
                names = [get_recipe(_recipe_of(recipe)).name] * len(qs)
            key_params = _plain(params) if given is None else {**_plain(given), **_plain(params)}
            out: list[RetrievalResult | None] = [None] * len(qs)
            keys: list[str | None] = [None] * len(qs)
            if self.cache is not None and use_cache and vectors is None:
                for i, q in enumerate(qs):
                    key = self.cache.key(
                        tenant if tenant is not None else "",
                        q,
                        {
                            "recipe": names[i],
                            "params": key_params,
                            "context": _plain(context or {}),
                        },
                        self.generation,
                    )
                    keys[i] = key
                    hit = self.cache.get(key)
                    if hit is not None:
                        out[i] = hit
            for name in dict.fromkeys(names):
                todo = [i for i in range(len(qs)) if names[i] == name and out[i] is None]
                if not todo:
                    continue
                rec = get_recipe(name)
                p = resolve_params(rec.params, given, params)
                qv = None if vectors is None else vectors[todo]
                results = rec.run(
                    self.index,
                    [qs[i] for i in todo],
                    p,
                    tenant=tenant,
                    now=now,
                    query_vectors=qv,
                    context=context if rec.takes_context else None,
                    router=self._router(tenant) if rec.takes_context and recipe is None else None,
                )
                for i, r in zip(todo, results, strict=True):
                    route = routes[i]
                    if route is not None and r.route is None:
                        r = replace(r, route=route)
                    out[i] = r
                    cache_key = keys[i]
                    if cache_key is not None and self.cache is not None:
                        self.cache.put(cache_key, r)
        done = [r for r in out if r is not None]
        ms = (time.perf_counter() - t_start) * 1e3
        for r in done if log.isEnabledFor(logging.DEBUG) else ():
            log.debug(
                "retrieval",
                extra={
                    "recipe": r.recipe,
                    "query": r.query[:100],
                    "tenant": r.tenant,
                    "timings_us": {k: round(v * 1e6, 1) for k, v in r.timings.items()},
                    "stats": r.stats,
                    "facts": len(r.facts),
                    "chunks": len(r.chunks),
                },
            )
        if ms > self.slow_query_ms * max(1, len(qs)):
            log.warning(
                "slow query: %d queries took %.1f ms (threshold %.0f ms per query)",
                len(qs),
                ms,
                self.slow_query_ms,
            )
        return done

    # ------------------------------------------------------------------ async

    #: The threads that run :meth:`aretrieve` / :meth:`aretrieve_batch` for every GraphRAG
    #: of the process, made on first use (see :meth:`_run_async`).
    _async_pool: ClassVar[ThreadPoolExecutor | None] = None
    _async_pool_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def _async_executor(cls) -> ThreadPoolExecutor:
        with cls._async_pool_lock:
            if cls._async_pool is None:
                cls._async_pool = ThreadPoolExecutor(
                    max_workers=os.cpu_count() or 1, thread_name_prefix="graphrecall-async"
                )
            return cls._async_pool

    async def _run_async(self, call: Callable[[], _R]) -> _R:
        """Run ``call`` on graphrecall's own bounded thread pool and await it, so the event
        loop keeps serving while a query runs.

        A dedicated pool (one thread per CPU core), not ``asyncio.to_thread``: retrieval is
        CPU work, so more threads than cores gain nothing, and a burst of awaits must queue
        here rather than fill the loop's shared default executor, which the application
        needs for its own blocking calls (DNS, files). The native kernels release the GIL,
        so the loop thread runs Python while they compute. Context variables are copied
        into the thread as ``asyncio.to_thread`` does. Cancelling the awaiting task does not
        stop a query already running: its result is dropped.
        """
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        return await loop.run_in_executor(self._async_executor(), ctx.run, call)

    async def aretrieve(
        self,
        query: str,
        *,
        recipe: str | RecipeParams | None = None,
        tenant: Hashable | None = None,
        now: int | None = None,
        context: Mapping[str, Any] | None = None,
        query_vector: npt.ArrayLike | None = None,
        use_cache: bool = True,
        **params: Unpack[RecipeOverrides],
    ) -> RetrievalResult:
        """:meth:`retrieve` without blocking the event loop (see :meth:`aretrieve_batch`).

        Example:
            >>> res = await rag.aretrieve("Who is Ada?", recipe="chunk_boost")  # doctest: +SKIP
        """
        return await self._run_async(
            partial(
                self.retrieve,
                query,
                recipe=recipe,
                tenant=tenant,
                now=now,
                context=context,
                query_vector=query_vector,
                use_cache=use_cache,
                **params,
            )
        )

    async def aretrieve_batch(
        self,
        queries: Sequence[str],
        *,
        recipe: str | RecipeParams | None = None,
        tenant: Hashable | None = None,
        now: int | None = None,
        context: Mapping[str, Any] | None = None,
        query_vectors: npt.ArrayLike | None = None,
        use_cache: bool = True,
        **params: Unpack[RecipeOverrides],
    ) -> list[RetrievalResult]:
        """:meth:`retrieve_batch` without blocking the event loop: the batch runs on
        graphrecall's own thread pool (one thread per core) while the loop keeps serving.

        Same arguments, results and errors as :meth:`retrieve_batch`; errors are raised at
        the ``await``.

        Example:
            >>> results = await rag.aretrieve_batch(["Who is Ada?", "What is JACQ?"],
            ...                                     recipe="ppr", tenant="t1")  # doctest: +SKIP
        """
        return await self._run_async(
            partial(
                self.retrieve_batch,
                queries,
                recipe=recipe,
                tenant=tenant,
                now=now,
                context=context,
                query_vectors=query_vectors,
                use_cache=use_cache,
                **params,
            )
        )

    # ------------------------------------------------------------------ presentation

    def token_counter(self) -> TokenCounter:
        """The token counter of context budgets."""
        if self._counter is None:
            from . import context as ctx

            # The embedder's own tokenizer when it has one (E5, WordLlama, a
            # sentence-transformers model), else the conservative whitespace estimate.
            make = getattr(self.index.embedder, "token_counter", None)
            counter = make() if callable(make) else None
            self._counter = counter if counter is not None else ctx.whitespace_tokens
        return self._counter

    def context(
        self, result: RetrievalResult, *, format: str | None = None, budget: int | None = 500
    ) -> ContextBlock:
        """The result as a context block (the recipe's source format by default: seed 000's
        narrative, seed 003's "## Knowledge Graph Context", seed 004's "## Known Facts", a
        passage list for chunk recipes, or "json"), packed by score within ``budget`` tokens."""
        from .context import render

        return render(
            result,
            format or _default_format(result.recipe),
            budget=budget,
            count=self.token_counter(),
        )

    def explain(self, result: RetrievalResult) -> str:
        """Paths and score components of every item (:func:`graphrecall.explain.explain`)."""
        return explain(result)


def _default_router(index: GraphIndex, tenant: int) -> Router:
    """The default router of tenant code ``tenant``: an
    :class:`~graphrecall.router.IndexRouter` over that tenant's data whose seed router takes
    a query naming one of the tenant's entities as a graph query (seed 004's rule)."""
    from .router import HeuristicRouter, IndexProfile, IndexRouter

    names = index.names

    def known(query: str) -> bool:
        try:
            return bool(names.recognize(query, tenant=tenant, limit=1))
        except UnknownTenantError:  # a tenant without entities names none
            return False

    return IndexRouter(
        IndexProfile.of(index, tenant), seed_router=HeuristicRouter(known_entity=known)
    )


def _query_vectors(query_vectors: npt.ArrayLike | None, n: int) -> npt.NDArray[Any] | None:
    """The caller's query vectors as rows, one per query.

    Raises:
        ParameterError: Not one row per query (too few or too many), naming the counts.
    """
    if query_vectors is None:
        return None
    qv = np.asarray(query_vectors)
    if qv.ndim == 1 and n == 1:
        qv = qv.reshape(1, -1)
    if qv.ndim != 2 or qv.shape[0] != n:
        rows = qv.shape[0] if qv.ndim == 2 else f"shape {qv.shape}"
        raise ParameterError(
            f"invalid parameter query_vectors: {rows} rows for {n} queries (give one per query)"
        )
    return qv


def _recipe_of(params: object) -> str:
    """The recipe a parameter set belongs to (its class's ``recipe``)."""
    name = getattr(type(params), "recipe", None)
    if not isinstance(name, str):
        raise ParameterError(
            f"invalid parameter recipe: {type(params).__name__} is not a recipe's parameters"
        )
    return name


def _default_format(recipe: str) -> str:
    """The context block ``recipe`` renders by default ("chunks" for an unknown one)."""
    try:
        return get_recipe(recipe).default_format
    except ParameterError:
        return "chunks"


def _plain(v: Any) -> Any:
    """A JSON-ready form of parameters for cache keys."""
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_plain(x) for x in v]
    if hasattr(v, "__dataclass_fields__"):
        return _plain(dict(v.__dict__))
    if isinstance(v, np.generic):
        return v.item()
    return v

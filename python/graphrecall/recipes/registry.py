"""The recipe registry: every recipe by name, built-in or third-party.

A recipe is any object with the :class:`Recipe` protocol: a ``name``, its frozen parameter
dataclass ``params`` (whose instances carry the recipe's name as ``recipe``), the context
block it renders by default, whether it takes the caller's context and router, and
``run``. Third-party recipes join with :func:`register_recipe`, or from an installed
package through the entry-point group ``graphrecall.recipes`` (each entry point names a
:class:`Recipe` object), loaded the first time a name is not found or the names are
listed.

Example:
    >>> from graphrecall.recipes import get_recipe, list_recipe_names
    >>> "ppr" in list_recipe_names()
    True
    >>> get_recipe("chunk_boost").default_format
    'chunks'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError
from ..index import GraphIndex
from .hits import RetrievalResult
from .stages import resolve_params

if TYPE_CHECKING:
    from ..router import Router

__all__ = [
    "ENTRY_POINT_GROUP",
    "FunctionRecipe",
    "Recipe",
    "RecipeParams",
    "get_recipe",
    "list_recipe_names",
    "register_recipe",
]

#: The entry-point group third-party packages register recipes under.
ENTRY_POINT_GROUP = "graphrecall.recipes"


class RecipeParams(Protocol):
    """A recipe's frozen parameter dataclass: its instances name their recipe."""

    recipe: ClassVar[str]


P = TypeVar("P", bound=RecipeParams)
P_contra = TypeVar("P_contra", bound=RecipeParams, contravariant=True)


class Recipe(Protocol[P_contra]):
    """What the registry holds and :class:`~graphrecall.rag.GraphRAG` runs.

    Attributes:
        name: The registry name.
        params: The parameter dataclass (its defaults are the source design's).
        default_format: The context block :meth:`GraphRAG.context` renders by default.
        takes_context: Whether ``run`` reads the caller's ``context`` (and a router).
    """

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> type[RecipeParams]: ...

    @property
    def default_format(self) -> str: ...

    @property
    def takes_context(self) -> bool: ...

    def run(
        self,
        index: GraphIndex,
        queries: Sequence[str],
        params: P_contra,
        *,
        tenant: Hashable | None = None,
        now: int | None = None,
        query_vectors: npt.ArrayLike | None = None,
        context: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
        router: Router | None = None,
    ) -> list[RetrievalResult]:
        """One result per query (the batch in one embedding call and one graph call)."""
        ...


#: A built-in recipe's pipeline: (index, queries, params, tenant, now, query vectors,
#: context, router) -> results.
Pipeline = Callable[..., list[RetrievalResult]]


@dataclass(frozen=True)
class FunctionRecipe(Generic[P]):
    """A :class:`Recipe` made of a pipeline function (how the built-in recipes are made).

    Calling it runs the pipeline with the parameter set ``params`` (default: the
    defaults) and keyword overrides, an unknown name being a ParameterError.
    """

    name: str
    params: type[P]
    pipeline: Pipeline
    default_format: str = "chunks"
    takes_context: bool = False

    def run(
        self,
        index: GraphIndex,
        queries: Sequence[str],
        params: P,
        *,
        tenant: Hashable | None = None,
        now: int | None = None,
        query_vectors: npt.ArrayLike | None = None,
        context: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
        router: Router | None = None,
    ) -> list[RetrievalResult]:
        """One result per query (see :class:`Recipe`)."""
        return _sliced(
            self.pipeline, index, queries, params, tenant, now, query_vectors, context, router
        )

    def __call__(
        self,
        index: GraphIndex,
        queries: str | Sequence[str],
        params: P | None = None,
        *,
        tenant: Hashable | None = None,
        now: int | None = None,
        query_vectors: npt.ArrayLike | None = None,
        context: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
        router: Router | None = None,
        **overrides: object,
    ) -> list[RetrievalResult]:
        """Run with ``params`` and keyword overrides (the untyped, by-name form)."""
        if not self.takes_context and (context is not None or router is not None):
            raise ParameterError(f"recipe {self.name} takes no context or router")
        p = resolve_params(self.params, params, overrides)
        return _sliced(
            self.pipeline, index, queries, p, tenant, now, query_vectors, context, router
        )


#: Queries per native batch: a larger batch runs slice by slice, so the core's per-call
#: arrays stay bounded however many queries are given (results are Python objects: a batch
#: too big for memory is then a ``MemoryError``, never an abort in the core).
BATCH_SLICE = 8192


def _sliced(
    pipeline: Callable[..., list[RetrievalResult]],
    index: GraphIndex,
    queries: str | Sequence[str],
    params: Any,
    tenant: Hashable | None,
    now: int | None,
    query_vectors: npt.ArrayLike | None,
    context: Any,
    router: Router | None,
) -> list[RetrievalResult]:
    """``pipeline`` over ``queries`` in slices of :data:`BATCH_SLICE`."""
    n = 1 if isinstance(queries, str) else len(queries)
    if isinstance(queries, str) or n <= BATCH_SLICE:
        return pipeline(index, queries, params, tenant, now, query_vectors, context, router)
    qv = None if query_vectors is None else np.asarray(query_vectors)
    if qv is not None and (qv.ndim != 2 or len(qv) != n):
        raise ParameterError(
            f"invalid parameter query_vectors: shape {qv.shape} for {n} queries "
            f"(one row per query)",
            parameter="query_vectors",
        )
    per_query = isinstance(context, Sequence) and not isinstance(context, (str, Mapping))
    if per_query and len(context) != n:
        raise ParameterError(
            f"invalid parameter context: {len(context)} contexts for {n} queries",
            parameter="context",
        )
    out: list[RetrievalResult] = []
    for a in range(0, n, BATCH_SLICE):
        b = min(a + BATCH_SLICE, n)
        out += pipeline(
            index,
            list(queries[a:b]),
            params,
            tenant,
            now,
            None if qv is None else qv[a:b],
            context[a:b] if per_query else context,
            router,
        )
    return out


_LOCK = threading.Lock()
_RECIPES: dict[str, Recipe[Any]] = {}
_PLUGINS_LOADED = False


def register_recipe(recipe: Recipe[Any], *, replace: bool = False) -> None:
    """Add ``recipe`` to the registry under ``recipe.name``.

    Args:
        recipe: Any object with the :class:`Recipe` protocol.
        replace: Replace a recipe of the same name (else that is an error).

    Raises:
        ParameterError: The name is taken (and ``replace`` is False), or is not a str.
    """
    name = recipe.name
    if not isinstance(name, str) or not name:
        raise ParameterError(f"invalid recipe name: {name!r}")
    with _LOCK:
        if name in _RECIPES and not replace and _RECIPES[name] is not recipe:
            raise ParameterError(f"a recipe named {name!r} is already registered")
        _RECIPES[name] = recipe


def _load_plugins() -> None:
    """Register the recipes of the ``graphrecall.recipes`` entry points (once)."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _RECIPES:
            register_recipe(ep.load())


def get_recipe(name: str) -> Recipe[Any]:
    """The recipe registered as ``name``.

    Raises:
        ParameterError: No recipe has that name.
    """
    got = _RECIPES.get(name)
    if got is None:
        _load_plugins()
        got = _RECIPES.get(name)
        if got is None:
            raise ParameterError(f"invalid parameter recipe: {name!r}; known: {sorted(_RECIPES)}")
    return got


def list_recipe_names() -> list[str]:
    """The registered recipes' names, built-in ones first."""
    _load_plugins()
    return list(_RECIPES)


class _View(Mapping[str, Any]):
    """A read-only mapping over the registry (``RECIPES`` / ``PARAMS``)."""

    def __init__(self, value: Callable[[Recipe[Any]], Any]):
        self._value = value

    def __getitem__(self, name: str) -> Any:
        got = _RECIPES.get(name)
        if got is None:
            raise KeyError(name)
        return self._value(got)

    def __iter__(self) -> Iterator[str]:
        return iter(list(_RECIPES))

    def __len__(self) -> int:
        return len(_RECIPES)

    def __repr__(self) -> str:
        return f"{{{', '.join(repr(k) for k in _RECIPES)}}}"


def _callable(recipe: Recipe[Any]) -> Callable[..., list[RetrievalResult]]:
    """``recipe`` as a callable taking keyword overrides (a :class:`FunctionRecipe`)."""
    if isinstance(recipe, FunctionRecipe):
        return recipe

    def pipeline(
        index: GraphIndex,
        queries: str | Sequence[str],
        params: Any,
        tenant: Hashable | None,
        now: int | None,
        query_vectors: npt.ArrayLike | None,
        context: Any,
        router: Router | None,
    ) -> list[RetrievalResult]:
        qs = [queries] if isinstance(queries, str) else queries
        return recipe.run(
            index,
            qs,
            params,
            tenant=tenant,
            now=now,
            query_vectors=query_vectors,
            context=context,
            router=router,
        )

    return FunctionRecipe(
        recipe.name, recipe.params, pipeline, recipe.default_format, recipe.takes_context
    )


#: The recipes by name, as callables ``(index, queries, *, tenant, now, query_vectors,
#: **params)`` (a read-only view of the registry).
RECIPES: Mapping[str, Callable[..., list[RetrievalResult]]] = _View(_callable)
#: Each recipe's parameter dataclass (a read-only view of the registry).
PARAMS: Mapping[str, type[RecipeParams]] = _View(lambda r: r.params)

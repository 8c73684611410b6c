"""The items a recipe returns and the result that holds them.

Every recipe answers a query with one :class:`RetrievalResult`: the anchors it entered the
graph by, the entities, facts and chunks it ranked (each hit with the components of its score
and the path that reached it from an anchor), per-stage timings and fan-out statistics. The
hits are the one item model that context blocks, narratives and explanations read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from itertools import repeat
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from ..router import Route
    from .columns import HitColumns

__all__ = [
    "ChunkHit",
    "EntityHit",
    "FactHit",
    "LazyColumn",
    "LazyHits",
    "ReadOnlyDict",
    "RetrievalResult",
    "Step",
    "freeze_stats",
    "hit_builder",
    "hit_columns",
    "make_result",
    "pending",
]

Direction = Literal["out", "in"]
_T = TypeVar("_T")
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return _EMPTY


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a provenance path: from ``entity`` along ``predicate`` (fact ``fact``)
    in ``direction`` ("out": the entity is the fact's subject) to the next step's entity.
    The last step of a path has no fact."""

    entity: Hashable
    name: str
    predicate: str | None = None
    fact: Hashable | None = None
    direction: Direction = "out"


class ReadOnlyDict(dict):  # type: ignore[type-arg]
    """A dict that refuses changes: a hit's score components. A ``dict`` subclass (not a
    mapping proxy) so that ``json.dumps``, ``dataclasses.asdict`` and pickling take it as it
    is."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a hit's components are read-only")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[type[ReadOnlyDict], tuple[dict[str, Any]]]:
        return (type(self), (dict(self),))

    def __copy__(self) -> ReadOnlyDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> ReadOnlyDict:
        return self


def _read_only(components: Mapping[str, float]) -> Mapping[str, float]:
    return ReadOnlyDict(components) if type(components) is dict else components


@dataclass(frozen=True, slots=True)
class EntityHit:
    """An entity a recipe used: an anchor (``hop`` 0) or one reached through the graph.

    Attributes:
        how: How it was found: "vector", "name", "alias", "fuzzy", "keyword", "graph".
    """

    id: Hashable
    name: str
    score: float
    hop: int = 0
    how: str = "graph"
    anchor: Hashable | None = None
    type: str | None = None
    strength: float | None = None
    path: tuple[Step, ...] = ()


@dataclass(frozen=True, slots=True)
class FactHit:
    """A ranked fact with its score components and its path from the anchor (immutable,
    like every hit: a cached result is shared by every caller)."""

    id: Hashable
    subject: Hashable
    subject_name: str
    predicate: str
    object: Hashable | None
    object_name: str | None
    object_value: str | None
    confidence: float
    score: float
    hop: int
    anchor: Hashable | None = None
    strength: float | None = None
    description: str | None = None
    since: int | None = None
    components: Mapping[str, float] = field(default_factory=ReadOnlyDict, hash=False)
    path: tuple[Step, ...] = ()

    def __post_init__(self) -> None:
        _freeze_components(self)

    @property
    def value(self) -> str:
        """The object as text: its literal value, else the object entity's name."""
        if self.object_value is not None:
            return self.object_value
        return self.object_name if self.object_name is not None else "..."


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """A ranked chunk (passage / memory).

    Attributes:
        source: Where it came from: "vector", "keyword", "hybrid", "graph", "expansion",
            "ppr", "fused".
        components: The parts of its score (similarity, boosts, ranks, ...).
        path: The graph path that boosted or added it (empty for pure vector hits).
        tier: Its scope / tier (seed 002).
    """

    id: Hashable
    text: str
    score: float
    source: str
    components: Mapping[str, float] = field(default_factory=ReadOnlyDict, hash=False)
    path: tuple[Step, ...] = ()
    tier: str | None = None

    def __post_init__(self) -> None:
        _freeze_components(self)


def _freeze_components(hit: FactHit | ChunkHit) -> None:
    """A hit built by its public constructor holds its components read-only too."""
    c = hit.components
    if type(c) is dict:
        object.__setattr__(hit, "components", ReadOnlyDict(c))


class LazyColumn(Generic[_T]):
    """One value per item of a list of hits, all computed by ``make()`` on the first access
    to any of them (a query's paths share their prefixes, its score components one gather).

    Hits hold a :class:`_Pending` reference to the column in their ``path`` / ``components``
    slot until the attribute is read (see :func:`_lazy_slot`): most callers rank, print or
    pack ids and text and never read either, and building them was most of a recipe's Python
    time."""

    __slots__ = ("_make", "_values")

    def __init__(self, make: Callable[[], Sequence[_T]]):
        self._make: Callable[[], Sequence[_T]] | None = make
        self._values: Sequence[_T] | None = None

    def values(self) -> Sequence[_T]:
        """Every item's value (computed once)."""
        values = self._values
        if values is None:
            make = self._make
            if make is None:  # pragma: no cover - make() raised before; nothing to retry with
                raise RuntimeError("a lazy column failed to build")
            values = self._values = make()
            self._make = None  # drop the closure (and the arrays it holds)
        return values

    def __getitem__(self, i: int) -> _T:
        return self.values()[i]


class _Pending(tuple):  # type: ignore[type-arg]
    """(path column, components column, item): what a hit's lazy slot holds until read.

    A tuple subclass so that ``map(_Pending, ...)`` builds one per hit without a Python
    ``__init__``; never seen by callers (the slot's property resolves it)."""

    __slots__ = ()


def pending(paths: LazyColumn[Any] | None, components: LazyColumn[Any] | None, n: int) -> list[Any]:
    """One :class:`_Pending` per item."""
    return list(map(_Pending, zip(repeat(paths, n), repeat(components, n), range(n), strict=True)))


def _lazy_slot(cls: type, name: str, which: int) -> None:
    """Turn dataclass slot ``name`` of ``cls`` into a property that resolves a
    :class:`_Pending` (column ``which`` of it) on first read and stores the value in the
    slot. Construction, equality, repr, ``dataclasses.fields`` / ``replace`` / ``asdict``,
    pickling and copying all go through the attribute, so they see the value. The setter is
    the slot's own, reached only by the frozen ``__init__`` (``object.__setattr__``): the
    class's ``__setattr__`` refuses every other assignment."""
    slot = cls.__dict__[name]
    get, put, drop = slot.__get__, slot.__set__, slot.__delete__

    def fget(self: Any) -> Any:
        v = get(self)
        if type(v) is _Pending:
            v = v[which][v[2]]
            if type(v) is dict:
                v = ReadOnlyDict(v)
            put(self, v)
        return v

    setattr(
        cls, name, property(fget, put, drop, doc=f"{cls.__name__}.{name} (built on first read)")
    )


for _cls in (EntityHit, FactHit, ChunkHit):
    _lazy_slot(_cls, "path", 0)
for _cls in (FactHit, ChunkHit):
    _lazy_slot(_cls, "components", 1)
del _cls


def hit_builder(cls: type[_T]) -> Callable[..., _T]:
    """A constructor of frozen hit class ``cls`` for the recipes' bulk paths, with the
    arguments of ``cls`` (positional or keyword, same defaults).

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, which
    costs several times as much as plain slot stores. The builder is a twin class with the
    same slots whose ``__init__`` stores plainly and then turns the object into a ``cls``
    (the layouts are identical, so the switch is allowed and costs one assignment). Dict
    components become :class:`ReadOnlyDict`."""
    cached = _BUILDERS.get(cls)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    params: list[str] = []
    scope: dict[str, Any] = {"_cls": cls, "_ro": _read_only}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.default is not MISSING:
            scope[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        elif f.default_factory is not MISSING:
            scope["_EMPTY_RO"] = ReadOnlyDict()
            params.append(f"{f.name}=_EMPTY_RO")
        else:
            params.append(f.name)
    body = "".join(
        f"        self.{n} = _ro({n})\n" if n == "components" else f"        self.{n} = {n}\n"
        for n in names
    )
    src = (
        f"class Builder:\n    __slots__ = _cls.__slots__\n"
        f"    def __init__(self, {', '.join(params)}):\n{body}        self.__class__ = _cls\n"
    )
    exec(src, scope)
    built: Any = scope["Builder"]
    built.__qualname__ = built.__name__ = f"{cls.__name__}Builder"
    _BUILDERS[cls] = built
    return built  # type: ignore[no-any-return]


_BUILDERS: dict[type, Any] = {}


class LazyHits:
    """A result's list of hits held as columns (:mod:`.columns`), the hit objects built on
    first read.

    :class:`RetrievalResult` holds one in its ``anchors`` / ``entities`` / ``facts`` /
    ``chunks`` slot until the attribute is read; writers that need only some fields (the
    service's lean bodies) read the columns (:func:`hit_columns`) and never build a hit."""

    __slots__ = ("_hits",)

    def __init__(self) -> None:
        self._hits: tuple[Any, ...] | None = None

    def hits(self) -> tuple[Any, ...]:
        """The hit objects (built once)."""
        hits = self._hits
        if hits is None:
            hits = self._hits = self._build()
        return hits

    def _build(self) -> tuple[Any, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def parts(self) -> tuple[HitColumns, ...]:
        """The column sets whose hits, in order, make the list."""
        raise NotImplementedError  # pragma: no cover - abstract


def _frozen_map(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only view of ``value``, nested dicts and lists frozen too (a mapping already
    read-only is kept as it is)."""
    if value is None:
        return _EMPTY
    if type(value) is MappingProxyType:
        return value
    return MappingProxyType({k: _frozen(v) for k, v in value.items()})


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return _frozen_map(value)
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    """``value`` with every mapping as a dict (nested ones too), for JSON."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _step_dict(s: Step) -> dict[str, Any]:
    return {
        "entity": s.entity,
        "name": s.name,
        "predicate": s.predicate,
        "fact": s.fact,
        "direction": s.direction,
    }


def _hit_dict(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fld in fields(obj):
        k, v = fld.name, getattr(obj, fld.name)
        if k == "path":
            out[k] = [_step_dict(s) for s in v]
        elif isinstance(v, Mapping):
            out[k] = dict(v)
        else:
            out[k] = v
    return out


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """One query's result, immutable: a cached result is shared by every caller.

    Sequences are tuples and mappings read-only views; the constructor converts lists and
    dicts.

    Attributes:
        recipe: The recipe that produced it.
        query: The query text.
        tenant: The tenant it ran in.
        anchors: The entities the query entered the graph by.
        entities: Entities reached (anchors first).
        facts: Ranked facts (graph recipes).
        chunks: Ranked chunks (chunk recipes).
        tiers: Results by tier (``routed_hybrid``), else None.
        timings: Seconds per stage (embed, anchors, graph, score, ...).
        stats: Fan-out per hop, boosts and other logged numbers.
        route: The router's decision, when the query was routed.
        params: The parameters used.
        fallback: Why a fallback was taken (e.g. embedding failed), else None.
    """

    recipe: str
    query: str
    tenant: Hashable | None
    anchors: tuple[EntityHit, ...] = ()
    entities: tuple[EntityHit, ...] = ()
    facts: tuple[FactHit, ...] = ()
    chunks: tuple[ChunkHit, ...] = ()
    tiers: Mapping[str, tuple[ChunkHit, ...]] | None = None
    timings: Mapping[str, float] = field(default_factory=_empty)
    stats: Mapping[str, Any] = field(default_factory=_empty)
    route: Route | None = None
    params: Mapping[str, Any] = field(default_factory=_empty)
    fallback: str | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        for name in ("anchors", "entities", "facts", "chunks"):
            v = getattr(self, name)
            if type(v) is not tuple:
                put(self, name, tuple(v))
        if self.tiers is not None and type(self.tiers) is not MappingProxyType:
            put(self, "tiers", MappingProxyType({t: tuple(c) for t, c in self.tiers.items()}))
        for name in ("timings", "stats", "params"):
            v = getattr(self, name)
            if type(v) is not MappingProxyType:
                put(self, name, _frozen_map(v))

    def __reduce__(self) -> tuple[type[RetrievalResult], tuple[Any, ...]]:
        # Read-only views do not pickle: the fields as plain values, frozen again on load.
        return (type(self), tuple(_plain(getattr(self, f.name)) for f in fields(self)))

    @property
    def chunk_ids(self) -> list[Hashable]:
        """Ids of the ranked chunks."""
        return [c.id for c in self.chunks]

    @property
    def fact_ids(self) -> list[Hashable]:
        """Ids of the ranked facts."""
        return [f.id for f in self.facts]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (paths as lists of steps)."""
        return {
            "recipe": self.recipe,
            "query": self.query,
            "tenant": self.tenant,
            "anchors": [_hit_dict(a) for a in self.anchors],
            "entities": [_hit_dict(e) for e in self.entities],
            "facts": [_hit_dict(f) for f in self.facts],
            "chunks": [_hit_dict(c) for c in self.chunks],
            "tiers": None
            if self.tiers is None
            else {t: [_hit_dict(c) for c in cs] for t, cs in self.tiers.items()},
            "timings": dict(self.timings),
            "stats": _plain(self.stats),
            "fallback": self.fallback,
        }


def _fast_constructor() -> Callable[..., RetrievalResult]:
    """A constructor of :class:`RetrievalResult` for the recipes' own results, whose
    sequences already are tuples and mappings read-only: it sets the slots directly (a
    frozen dataclass's ``__init__`` and its conversions cost several times more, per
    query)."""
    names = [f.name for f in fields(RetrievalResult)]
    setters = {n: RetrievalResult.__dict__[n].__set__ for n in names}
    args = ", ".join(names)
    body = "".join(f"    _set_{n}(r, {n})\n" for n in names)
    src = f"def make({args}):\n    r = _new(_cls)\n{body}    return r\n"
    scope: dict[str, Any] = {f"_set_{n}": setters[n] for n in names}
    scope.update(_new=object.__new__, _cls=RetrievalResult)
    exec(src, scope)
    make: Callable[..., RetrievalResult] = scope["make"]
    return make


#: ``make_result(recipe, query, tenant, anchors, entities, facts, chunks, tiers, timings,
#: stats, route, params, fallback)``, every sequence a tuple and every mapping read-only.
make_result = _fast_constructor()


#: The raw slot readers of the result's hit lists (:func:`hit_columns`).
_RAW_HITS: dict[str, Callable[[RetrievalResult], Any]] = {}


def _lazy_hits_slot(name: str) -> None:
    """Turn slot ``name`` of :class:`RetrievalResult` into a property that builds a
    :class:`LazyHits` into its tuple of hits on first read (construction, equality, repr,
    ``replace``, pickling all read the attribute)."""
    slot = RetrievalResult.__dict__[name]
    get, put, drop = slot.__get__, slot.__set__, slot.__delete__

    def fget(self: RetrievalResult) -> Any:
        v = get(self)
        if type(v) is tuple:
            return v
        if isinstance(v, LazyHits):
            v = v.hits()
            put(self, v)
        return v

    _RAW_HITS[name] = get
    doc = f"RetrievalResult.{name} (built on first read when held as columns)"
    setattr(RetrievalResult, name, property(fget, put, drop, doc=doc))


for _name in ("anchors", "entities", "facts", "chunks"):
    _lazy_hits_slot(_name)
del _name


def hit_columns(result: RetrievalResult, name: str) -> LazyHits | None:
    """The columns that ``result``'s hit list ``name`` ("anchors", "entities", "facts",
    "chunks") is held as until it is read, or None once it is a tuple of hits."""
    v = _RAW_HITS[name](result)
    return v if isinstance(v, LazyHits) else None


def freeze_stats(stats: Mapping[str, Any]) -> Mapping[str, Any]:
    """``stats`` read-only, its nested dicts too (one level: what recipes log)."""
    return MappingProxyType(
        {k: MappingProxyType(v) if type(v) is dict else v for k, v in stats.items()}
    )

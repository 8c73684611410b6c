"""The table model every store and loader shares: :class:`GraphTables`.

A :class:`GraphTables` holds a knowledge graph as columns (numpy arrays by column name), the
shape the storage schema has (see :mod:`graphrecall.storage.sqlite`), before any of it is
compiled into a :class:`~graphrecall.KnowledgeGraph`:

=============  =====================================================================
table          columns (``*`` required)
=============  =====================================================================
``entities``   ``id*``, ``tenant``, ``name``, ``type``, ``description``,
               ``primary_chunk``, ``created_at``
``facts``      ``subject*``, ``id``, ``object`` (None / NaN = a literal fact),
               ``predicate``, ``object_value``, ``description``, ``confidence``,
               ``strength``, ``status``, ``source``, ``access_count``,
               ``last_accessed``, ``created_at``, ``valid_from``, ``valid_to``,
               ``sequence``
``chunks``     ``id*``, ``tenant``, ``text``, ``scope``, ``category``, ``tags`` (list of
               str or JSON), ``metadata`` (dict or JSON), ``created_at``,
               ``expires_at``, ``confidence``, ``access_count``, ``last_accessed``
``mentions``   ``chunk*``, ``entity*``, ``count``
``aliases``    ``entity*``, ``alias*``
=============  =====================================================================

plus :class:`EmbeddingSet`\\ s (vectors of entities, chunks or aliases, by model).

:meth:`GraphTables.check` validates every row *before* anything is built or written and
either refuses the load with a :class:`BadDataError` whose :class:`LoadReport` names the
first offending rows of each table and counts all of them, or (``on_bad="skip"``) drops the
bad rows, and the rows that depend on them, and reports both. Nothing is dropped silently.

Conventions of a checked table (what :meth:`GraphTables.check` returns and every store
reads back): ids are ``int64`` arrays when every id of the column is an int, object arrays
of ``int`` / ``str`` otherwise (nullable references such as ``facts.object`` are always
object arrays, ``None`` = none); times are ``int64`` seconds with ``NULL_TIME``
(``-2**63``) for null; ``sequence`` is ``int64`` with the same sentinel for null;
numbers are ``float64`` (``float32`` when given so; ``chunks.confidence`` with NaN for
null); statuses and sources are names;
``tags`` are lists of str and ``metadata`` dicts (or None); text is ``str`` or None.
"""

from __future__ import annotations

import copy
import itertools
import json
import operator
import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._columns import (
    NULL_TIME,
    IdMap,
    ObjectColumn,
    Vocab,
    describe,
    description,
    floats,
    ints,
    take,
    time_value,
    times,
    value_types,
)
from ..errors import DataError, ParameterError
from ..graph import DEFAULT_SOURCES, DEFAULT_STATUSES, KnowledgeGraph, _sequence_col

__all__ = [
    "COLUMNS",
    "MAX_REPORTED_ROWS",
    "NULL_SEQUENCE",
    "NULL_TIME",
    "REQUIRED",
    "TABLES",
    "BadDataError",
    "BadRow",
    "EmbeddingKind",
    "EmbeddingSet",
    "GraphTables",
    "LoadReport",
    "OnBad",
    "TableReport",
]

OnBad = Literal["raise", "skip"]
EmbeddingKind = Literal["entity", "chunk", "alias"]

#: The tables, in dependency order (a table refers only to tables before it).
TABLES: tuple[str, ...] = ("chunks", "entities", "facts", "mentions", "aliases")

#: The columns of each table.
COLUMNS: Mapping[str, tuple[str, ...]] = {
    "entities": ("id", "tenant", "name", "type", "description", "primary_chunk", "created_at"),
    "facts": (
        "id",
        "subject",
        "object",
        "predicate",
        "object_value",
        "description",
        "confidence",
        "strength",
        "status",
        "source",
        "access_count",
        "last_accessed",
        "created_at",
        "valid_from",
        "valid_to",
        "sequence",
    ),
    "chunks": (
        "id",
        "tenant",
        "text",
        "scope",
        "category",
        "tags",
        "metadata",
        "created_at",
        "expires_at",
        "confidence",
        "access_count",
        "last_accessed",
    ),
    "mentions": ("chunk", "entity", "count"),
    "aliases": ("entity", "alias"),
}

#: The columns a table cannot be without.
REQUIRED: Mapping[str, tuple[str, ...]] = {
    "entities": ("id",),
    "facts": ("subject",),
    "chunks": ("id",),
    "mentions": ("chunk", "entity"),
    "aliases": ("entity", "alias"),
}

#: How many offending rows a report names per table.
MAX_REPORTED_ROWS = 10
#: The null of ``facts.sequence`` (as in the core).
NULL_SEQUENCE = -(2**63)

_EMBEDDING_KINDS = ("entity", "chunk", "alias")
_PARENT = {"entity": "entities", "chunk": "chunks", "alias": "aliases"}
_OBJECT_COLUMNS = frozenset({"tags", "metadata", "object_value"})
_I64_MAX = 2**63 - 1
_U32_LIMIT = 2**32 - 2  # 2**32 - 1 is the core's "none"
_MAX_TENANT = 2**24 - 1
_F32_MAX = float(np.finfo(np.float32).max)
#: Value types whose ``==`` against None falls back to identity (vectorised None tests).
_PLAIN_TYPES: frozenset[type] = frozenset({int, str, float, type(None)})
_NONE = np.array(None, dtype=object)

Array = npt.NDArray[Any]
Mask = npt.NDArray[np.bool_]


# ------------------------------------------------------------------------------ the model


@dataclass
class EmbeddingSet:
    """Vectors stored with the graph: one model's embeddings of entities, chunks or aliases.

    Attributes:
        kind: What the ids name: ``"entity"``, ``"chunk"`` or ``"alias"`` (alias text).
        ids: The embedded rows' ids, shape ``(n,)``.
        vectors: ``float32 (n, d)`` (L2-normalised or not: stored as given). Before
            :meth:`GraphTables.check`, a ragged sequence of vectors is accepted too (an
            object array of 1-D vectors); the check refuses rows of the wrong dimension.
        model: The model's name (None = unnamed).
    """

    kind: EmbeddingKind
    ids: Array
    vectors: Array
    model: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _EMBEDDING_KINDS:
            raise DataError(
                f"embeddings: kind {self.kind!r} is not one of 'entity', 'chunk', 'alias'"
            )
        if self.model is not None and not isinstance(self.model, str):
            raise DataError(f"embeddings ({self.kind}): model {self.model!r} is not a str")
        self.ids = _column(self.ids, "embeddings", "id")
        self.vectors = _vectors(self.vectors, self.kind)
        if len(self.vectors) != len(self.ids):
            raise DataError(
                f"embeddings ({self.kind}, model {self.model!r}): {len(self.ids)} ids but "
                f"{len(self.vectors)} vectors"
            )

    @property
    def dim(self) -> int | None:
        """The vectors' dimension (None while ragged, before the check)."""
        return int(self.vectors.shape[1]) if self.vectors.ndim == 2 else None

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class BadRow:
    """One refused row: where it is, its id (when it has one) and why."""

    table: str
    row: int
    id: Any
    reason: str
    dependent: bool = False

    def __str__(self) -> str:
        where = f"row {self.row}" + ("" if self.id is None else f" (id {self.id!r})")
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class TableReport:
    """What a check refused in one table.

    Attributes:
        table: The table (``embeddings[i]`` for the i-th embedding set).
        rows: Rows given.
        bad: Rows refused by a rule.
        dependent: Rows refused only because a row they refer to was refused.
        first: The first offending rows (at most :data:`MAX_REPORTED_ROWS`), by row.
    """

    table: str
    rows: int
    bad: int
    dependent: int
    first: tuple[BadRow, ...] = ()

    @property
    def refused(self) -> int:
        return self.bad + self.dependent


@dataclass(frozen=True)
class LoadReport:
    """What a load refused or skipped, per table.

    ``ok`` is True when every row passed. With ``on_bad="skip"`` the refused rows were
    dropped (``skipped`` counts them per table); with ``"raise"`` the load was refused.
    ``str(report)`` is a readable multi-line report; ``operation`` names what was
    checked in it (``"load"``, ``"add"``, ``"update"``).
    """

    tables: tuple[TableReport, ...]
    on_bad: OnBad = "raise"
    operation: str = "load"

    @property
    def ok(self) -> bool:
        return all(t.refused == 0 for t in self.tables)

    @property
    def refused(self) -> dict[str, int]:
        """Bad rows (by a rule or dependent) per table, tables without any left out."""
        return {t.table: t.refused for t in self.tables if t.refused}

    @property
    def skipped(self) -> dict[str, int]:
        """Rows dropped per table (empty unless ``on_bad="skip"``)."""
        return self.refused if self.on_bad == "skip" else {}

    def table(self, name: str) -> TableReport:
        """The report of one table (KeyError if the check saw no such table)."""
        for t in self.tables:
            if t.table == name:
                return t
        raise KeyError(name)

    def __str__(self) -> str:
        sizes = ", ".join(f"{t.rows} {t.table}" for t in self.tables)
        if self.ok:
            return f"graphrecall load report: every row passed ({sizes})"
        total = sum(t.refused for t in self.tables)
        n_tables = sum(1 for t in self.tables if t.refused)
        if self.on_bad == "skip":
            verdict = "skipped them"
        elif self.operation == "update":
            verdict = "refused the update"
        else:
            verdict = f'refused the {self.operation}; pass on_bad="skip" to drop them'

        lines = [
            f"graphrecall load report: {total} bad row{'s' * (total != 1)} in {n_tables} "
            f"table{'s' * (n_tables != 1)} ({verdict})"
        ]
        for t in self.tables:
            if not t.refused:
                continue
            parts = [f"{t.bad} by a rule"] if t.bad else []
            if t.dependent:
                parts.append(f"{t.dependent} depending on refused rows")
            lines.append(f"  {t.table}: {t.refused} of {t.rows} rows ({', '.join(parts)})")
            lines.extend(f"    {r}" for r in t.first)
            if t.refused > len(t.first):
                lines.append(f"    ... and {t.refused - len(t.first)} more")
        return "\n".join(lines)


class BadDataError(DataError):
    """A load refused because of bad rows; ``report`` holds the :class:`LoadReport` and the
    message is its text (the first offending rows of each table and the count of all)."""

    def __init__(self, report: LoadReport):
        super().__init__(str(report))
        self.report = report


@dataclass
class GraphTables:
    """A knowledge graph as columns, the shape of the storage schema.

    Columns may be given as numpy arrays, lists or pandas Series; they are converted to 1-D
    numpy arrays (text to object arrays). Unknown column names, missing required columns
    and columns of different lengths raise :class:`~graphrecall.errors.DataError` at once;
    row-level problems are :meth:`check`'s.

    Attributes:
        entities, facts, chunks, mentions, aliases: Columns by name (see the module doc).
        embeddings: Vectors stored with the graph.
        statuses, sources: The vocabularies statuses and sources are checked against and
            encoded with (names by code).
    """

    entities: dict[str, Array]
    facts: dict[str, Array]
    chunks: dict[str, Array] | None = None
    mentions: dict[str, Array] | None = None
    aliases: dict[str, Array] | None = None
    embeddings: list[EmbeddingSet] = field(default_factory=list)
    statuses: tuple[str, ...] = DEFAULT_STATUSES
    sources: tuple[str, ...] = DEFAULT_SOURCES

    def __post_init__(self) -> None:
        for name in TABLES:
            cols = getattr(self, name)
            if cols is not None:
                setattr(self, name, _table(name, cols))
        self.embeddings = list(self.embeddings)
        for e in self.embeddings:
            if not isinstance(e, EmbeddingSet):
                raise DataError(f"embeddings: {e!r} is not an EmbeddingSet")
        self.statuses = _vocabulary(self.statuses, "statuses")
        self.sources = _vocabulary(self.sources, "sources")

    def table(self, name: str) -> dict[str, Array] | None:
        """A table by name (``entities``, ``facts``, ``chunks``, ``mentions``, ``aliases``)."""
        if name not in COLUMNS:
            raise KeyError(name)
        cols: dict[str, Array] | None = getattr(self, name)
        return cols

    def n_rows(self, name: str) -> int:
        """Rows of a table (0 when absent)."""
        return _n_rows(self.table(name))

    def check(self, on_bad: OnBad = "raise") -> tuple[GraphTables, LoadReport]:
        """Validate every row before anything is built or written.

        Rules (each refused row is reported with the first rule it breaks):

        * ids: present, an ``int`` (within int64) or a ``str``, unique per table (the first
          occurrence is kept, later ones are refused);
        * references: ``facts.subject`` / ``facts.object``, ``mentions.chunk`` /
          ``mentions.entity``, ``aliases.entity``, ``entities.primary_chunk`` and the ids of
          embeddings must name a row of their table;
        * tenants: an int in ``[0, 2**24)`` or a str, one kind for the whole graph; a fact,
          mention or primary chunk must not join two tenants; a table without a tenant
          column is in the single tenant of the other (entities / chunks), else tenant 0;
        * facts: ``confidence`` a number in [0, 1] (NaN refused); ``strength`` finite and
          >= 0; ``status`` / ``source`` a name of ``statuses`` / ``sources`` (or a code);
          ``access_count`` an int in [0, 2**32 - 2]; times valid, ``valid_from <=
          valid_to``; ``sequence`` an int or null; ``predicate`` a str or an int code;
          ``object_value`` a str, int, float or None;
        * chunks: ``confidence`` in [0, 1] or null, ``access_count`` an int >= 0, ``tags``
          a list of str (or its JSON), ``metadata`` a dict (or its JSON);
        * mentions: ``count`` an int >= 1, one row per (chunk, entity); aliases: a
          non-empty str, one row per (entity, alias);
        * embeddings: finite values, the dimension of their model (that of most of the
          model's vectors), one vector per (kind, model, id).

        Args:
            on_bad: ``"raise"`` refuses the load when any row is bad; ``"skip"`` drops the
                bad rows and the rows depending on them (facts and mentions of a dropped
                entity, ...), which the report counts separately.

        Returns:
            The checked tables (normalised: see the module doc) and the report.

        Raises:
            BadDataError: ``on_bad="raise"`` and some row is bad (``.report`` holds the
                report: the first offending rows of each table and the count of all).
            ParameterError: ``on_bad`` is neither ``"raise"`` nor ``"skip"``.
        """
        checked = _check(self, on_bad)
        return checked.tables, checked.report

    def to_graph(
        self, on_bad: OnBad = "raise", *, release: bool = False
    ) -> tuple[KnowledgeGraph, LoadReport]:
        """:meth:`check`, then build the :class:`~graphrecall.KnowledgeGraph` (entity names,
        literal values, chunks and mentions included).

        Args:
            on_bad: As :meth:`check`.
            release: Empty these tables once checked, and hand each column to the graph
                as soon as it is encoded, so that the tables and the graph being built
                are never in memory together (for tables loaded only to be built:
                ``load_parquet(...).to_graph(release=True)`` peaks at about half the
                memory). The tables are left without rows; a refused load
                (:class:`BadDataError`) leaves them as they were.

        Raises:
            BadDataError, ParameterError: As :meth:`check`.
        """
        checked, report = self.check(on_bad)
        if not release:
            return checked.build_graph(), report
        for name in TABLES:
            cols = getattr(self, name)
            if cols is not None:
                setattr(self, name, {c: np.empty(0, dtype=v.dtype) for c, v in cols.items()})
        self.embeddings = []
        return _build_released(checked), report

    def build_graph(self, *, release: bool = False) -> KnowledgeGraph:
        """Build the graph of tables that :meth:`check` returned, without checking again
        (the graph ``KnowledgeGraph.from_arrays`` builds of the same columns, encoded
        column by column so that few temporaries are alive at once).

        Args:
            release: Take each column out of these tables as it is encoded (they are left
                empty), so that tables nobody else holds shrink while the graph grows.

        Raises:
            DataError: From the core, if the tables were not checked and hold bad rows.
        """
        if release:
            return _build_released(self)
        view = copy.copy(self)  # the same arrays, in dicts the build may empty
        for name in TABLES:
            cols = getattr(self, name)
            setattr(view, name, None if cols is None else dict(cols))
        return _build_released(view)


def _build_released(t: GraphTables) -> KnowledgeGraph:
    """:meth:`GraphTables.build_graph` that takes each column out of ``t`` and drops it once
    encoded (``t`` is left empty): when nothing else holds the columns, the tables shrink
    while the core's columns grow."""
    from .. import _core

    e, f, ch, m = t.entities, t.facts, t.chunks, t.mentions
    t.entities, t.facts, t.chunks, t.mentions, t.aliases = {}, {}, None, None, None
    t.embeddings = []
    n_ent, n_facts, n_ch = len(e["id"]), len(f["subject"]), _n_rows(ch)
    ent_t, ch_t, tenant_names = _graph_tenants(
        e.pop("tenant", None), None if ch is None else ch.pop("tenant", None), n_ent, n_ch
    )
    tenants = Vocab(list(tenant_names), "tenant")
    entity_tenant = tenants.encode(ent_t, "entities", "tenant", np.uint32)
    chunk_tenant = tenants.encode(ch_t, "chunks", "tenant", np.uint32)
    del ent_t, ch_t
    entities = _id_map(e.pop("id"), n_ent, "entity")
    names = e.pop("name", None)
    names = None if names is None else np.asarray(names, dtype=object)
    if names is not None and len(names) != n_ent:
        raise DataError(f"entities.name has {len(names)} rows, expected {n_ent}")
    del e
    subject = entities.to_index(f.pop("subject"), "facts", "subject").astype(np.uint32)
    _release_arrow_memory()
    obj = f.pop("object", None)
    if obj is None:
        obj32 = np.full(n_facts, np.uint32(2**32 - 1), dtype=np.uint32)
    else:
        # Validated to -1..n-1: the wrapping cast maps -1 to the core's "none".
        obj32 = entities.to_index(obj, "facts", "object", allow_none=True).astype(np.uint32)
    del obj
    _release_arrow_memory()
    pred_col = f.pop("predicate", None)
    if pred_col is None:
        predicates = Vocab(["related_to"], "predicate")
        pred = np.zeros(n_facts, dtype=np.uint32)
    elif pred_col.dtype.kind in "iu":
        pred = ints(pred_col, np.uint32, "facts", "predicate")
        n_p = int(pred.max()) + 1 if len(pred) else 1
        if n_p > 1 << 16:
            raise DataError(f"facts.predicate codes go up to {n_p - 1}; at most 65536 predicates")
        predicates = Vocab(list(range(n_p)), "predicate")
    else:
        predicates, codes64 = Vocab.learn(pred_col, "predicate")
        pred = codes64.astype(np.uint32)
        del codes64
    del pred_col
    _release_arrow_memory()
    statuses = Vocab(list(t.statuses), "status")
    sources = Vocab(list(t.sources), "source")

    def coded(col: str, vocab: Vocab, default: str) -> npt.NDArray[np.uint8]:
        values = f.pop(col, None)
        if values is None:
            return np.full(n_facts, vocab.code(default) if default in vocab.names else 0, np.uint8)
        return vocab.encode(values, "facts", col, np.uint8)

    status = coded("status", statuses, "confirmed")
    source = coded("source", sources, "system")
    _release_arrow_memory()

    def number(col: str, default: float, dtype: npt.DTypeLike) -> npt.NDArray[Any]:
        values = f.pop(col, None)
        if values is None:
            return np.full(n_facts, default, dtype=dtype)
        return np.asarray(values)

    confidence = floats(number("confidence", 1.0, np.float32), np.float32, "facts", "confidence")
    strength = floats(number("strength", 1.0, np.float32), np.float32, "facts", "strength")
    access = ints(number("access_count", 0, np.int64), np.uint32, "facts", "access_count")
    _release_arrow_memory()
    time_cols = {
        col: times(f.pop(col, None), "facts", col)
        for col in ("last_accessed", "created_at", "valid_from", "valid_to")
    }
    seq_col = f.pop("sequence", None)
    sequence = None if seq_col is None else _sequence_col(seq_col)
    del seq_col
    values = f.pop("object_value", None)
    values = None if values is None else np.asarray(values, dtype=object)
    if values is not None and len(values) != n_facts:
        raise DataError(f"facts.object_value has {len(values)} rows, expected {n_facts}")
    _release_arrow_memory()
    facts = _id_map(f.pop("id", None), n_facts, "fact")  # copied: once the rest is freed
    f.clear()
    chunks = _id_map(None if ch is None else ch.pop("id"), n_ch, "chunk")
    del ch
    if m is not None and len(m["chunk"]):
        m_chunk = chunks.to_index(m.pop("chunk"), "mentions", "chunk").astype(np.uint32)
        m_entity = entities.to_index(m.pop("entity"), "mentions", "entity").astype(np.uint32)
        count = m.pop("count", None)
        m_count = (
            np.ones(len(m_chunk), dtype=np.uint32)
            if count is None
            else ints(count, np.uint32, "mentions", "count")
        )
        del count
    else:
        m_chunk = m_entity = m_count = np.zeros(0, dtype=np.uint32)
    del m
    _release_arrow_memory()
    core = _core.CoreGraph(
        entity_tenant,
        subject,
        obj32,
        pred,
        confidence,
        strength,
        status,
        source,
        access,
        n_predicates=len(predicates),
        n_statuses=len(statuses),
        n_sources=len(sources),
        **time_cols,
        sequence=sequence,
        chunk_tenant=chunk_tenant,
        mention_chunk=m_chunk,
        mention_entity=m_entity,
        mention_count=m_count,
    )
    return KnowledgeGraph(
        core,
        entities=entities,
        facts=facts,
        chunks=chunks,
        statuses=statuses,
        sources=sources,
        predicates=predicates,
        tenants=tenants,
        entity_names=names,
        object_values=values,
    )


def _release_arrow_memory() -> None:
    """Give the pages of the columns just dropped back to the system, when Arrow (whose
    allocator keeps freed memory for reuse) loaded them."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


def _id_map(ids: Array | None, n: int, name: str) -> IdMap:
    """The :class:`IdMap` ``KnowledgeGraph.from_arrays`` makes of ``ids`` (None: facts are
    their rows ``0..n-1``, entities and chunks the identity)."""
    if ids is None:
        if name == "fact":
            return IdMap(np.arange(n, dtype=np.int64), n, name, copy=False)
        return IdMap(None, n, name)
    return IdMap(ids, n, name)


# ------------------------------------------------------------------------------ conversion


def _n_rows(cols: Mapping[str, Array] | None) -> int:
    if not cols:
        return 0
    return len(next(iter(cols.values())))


def _object_array(values: Sequence[Any]) -> Array:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _column(values: Any, table: str, name: str) -> Array:
    """Any 1-D column -> a numpy array (text as an object array)."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()  # pandas Series / Arrow arrays
    if isinstance(values, np.ndarray):
        arr = values
    else:
        # Python sequences: numpy only when every value has one plain type, so that numpy
        # never turns [1, "1"] into text or [True, 2] into ints.
        seq = list(values)
        kinds = {type(v) for v in seq}
        if name not in _OBJECT_COLUMNS and (kinds == {int} or kinds == {float}):
            try:
                arr = np.asarray(seq)
            except OverflowError:
                arr = _object_array(seq)
        else:
            arr = _object_array(seq)
    if arr.ndim != 1:
        raise DataError(f"{table}.{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind in "US":
        arr = arr.astype(object)
    return arr


def _table(name: str, cols: Mapping[str, Any]) -> dict[str, Array]:
    if not isinstance(cols, Mapping):
        raise DataError(f"{name} must be a mapping of column name -> column, got {cols!r}")
    unknown = [c for c in cols if c not in COLUMNS[name]]
    if unknown:
        raise DataError(
            f"{name} has unknown column{'s' * (len(unknown) > 1)} {unknown!r}; "
            f"known: {list(COLUMNS[name])!r}"
        )
    missing = [c for c in REQUIRED[name] if c not in cols]
    if missing:
        raise DataError(f"{name} has no {missing[0]!r} column")
    out = {c: _column(v, name, c) for c, v in cols.items()}
    lengths = {c: len(v) for c, v in out.items()}
    if len(set(lengths.values())) > 1:
        first = REQUIRED[name][0]
        for c, n in lengths.items():
            if n != lengths[first]:
                raise DataError(f"{name}.{c} has {n} rows, but {name}.{first} has {lengths[first]}")
    return out


def _vocabulary(names: Sequence[str], what: str) -> tuple[str, ...]:
    out = tuple(names)
    if not out or len(set(out)) != len(out) or not all(isinstance(n, str) for n in out):
        raise DataError(f"{what} must be distinct names (str), got {list(out)!r}")
    return out


def _vectors(vectors: Any, kind: str) -> Array:
    if isinstance(vectors, np.ndarray) and vectors.ndim == 2:
        return vectors
    seq = list(vectors)
    try:
        arr = np.asarray(seq, dtype=np.float64) if seq else np.zeros((0, 0))
    except (ValueError, TypeError):
        arr = _object_array(seq)
    if arr.ndim == 2:
        return arr
    if arr.ndim == 1 and arr.dtype != object:
        arr = _object_array(seq)
    if arr.ndim != 1:
        raise DataError(f"embeddings ({kind}): vectors must be (n, d), got shape {arr.shape}")
    return arr


def _is_null(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return bool(v != v)
    if isinstance(v, np.datetime64):
        return bool(np.isnat(v))
    return type(v).__name__ in ("NAType", "NaTType")


def _is_none(arr: Array) -> Mask:
    return np.fromiter(
        map(operator.is_, arr.tolist(), itertools.repeat(None)), dtype=bool, count=len(arr)
    )


def _none_mask(arr: Array, kinds: set[type]) -> Mask:
    """``v is None`` per value, for an object array whose value types are ``kinds``:
    vectorised when every type is one whose ``==`` against None is identity."""
    if kinds <= _PLAIN_TYPES:
        return np.asarray(np.equal(arr, _NONE), dtype=np.bool_)
    return _is_none(arr)


def _types(arr: Array) -> set[type]:
    """The Python types of an object array's values."""
    return value_types(arr)


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


# ------------------------------------------------------------------------------ checking


class _Work:
    """One table under check: its rules, then the rows kept."""

    def __init__(self, name: str, cols: Mapping[str, Array] | None, label: str, base: int):
        self.name = name
        self.label = label
        self.base = base
        self.present = cols is not None
        self.cols: Mapping[str, Array] = cols or {}
        self.n = _n_rows(cols)
        self.rules: list[tuple[Mask, Callable[[int], str], bool]] = []
        self.out: dict[str, Array | None] = {}
        self.key: Array | None = None  # the column others refer to, normalised
        self.key_unusable: Mask | None = None
        self.row_ids: Array | None = None  # ids for the report
        self.keep: Mask | None = None
        self._kept_index: _Index | None = None
        self._all_index: _Index | None = None

    def bad(self, mask: Mask, why: Callable[[int], str], *, dependent: bool = False) -> None:
        if self.keep is not None:  # pragma: no cover - a bug in the rule order
            raise RuntimeError(f"rule added to {self.name} after it was finished")
        if mask.any():
            self.rules.append((mask, why, dependent))

    def finish(self) -> Mask:
        keep = np.ones(self.n, dtype=bool)
        for mask, _, _ in self.rules:
            keep &= ~mask
        self.keep = keep
        return keep

    def index(self, kept: bool) -> _Index:
        if self.key is None or self.key_unusable is None or self.keep is None:
            raise RuntimeError(f"{self.name} has no key")  # pragma: no cover
        if kept:
            if self._kept_index is None:
                self._kept_index = _Index(self.key, ~self.key_unusable & self.keep)
            return self._kept_index
        if self._all_index is None:
            self._all_index = _Index(self.key, ~self.key_unusable)
        return self._all_index

    def report(self) -> TableReport:
        own = np.zeros(self.n, dtype=bool)
        dep = np.zeros(self.n, dtype=bool)
        for mask, _, dependent in self.rules:
            if dependent:
                dep |= mask
            else:
                own |= mask
        dep &= ~own
        first = []
        for i in np.flatnonzero(own | dep)[:MAX_REPORTED_ROWS].tolist():
            for mask, why, dependent in self.rules:
                if mask[i] and dependent != bool(own[i]):
                    rid = None if self.row_ids is None else _py(self.row_ids[i])
                    if i < self.base:  # a row already stored (an update broke it)
                        first.append(BadRow(self.name, i, rid, why(i), dependent))
                    else:
                        first.append(BadRow(self.label, i - self.base, rid, why(i), dependent))
                    break
        return TableReport(
            self.label, self.n - self.base, int(own.sum()), int(dep.sum()), tuple(first)
        )


class _Index:
    """Ids of a table's rows -> the row (first occurrence); -1 when absent."""

    def __init__(self, ids: Array, rows: Mask):
        pos = np.flatnonzero(rows)
        self._dict: dict[Hashable, int] | None = None
        self._table: npt.NDArray[np.int64] | None = None
        if ids.dtype == np.int64:
            keys = ids[pos]
            order = np.argsort(keys, kind="stable")
            self._keys: npt.NDArray[np.int64] | None = keys[order]
            self._pos = pos[order]
        else:
            self._keys = None
            self._pos = pos
            d: dict[Hashable, int] = {}
            for i in pos.tolist():
                d.setdefault(ids[i], i)
            self._dict = d

    def _rows_of(self, refs: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The row of each int64 id (-1 when absent), for an index of int64 ids."""
        keys = self._keys
        assert keys is not None
        out = np.full(len(refs), -1, dtype=np.int64)
        if not len(keys) or not len(refs):
            return out
        lo, hi = int(keys[0]), int(keys[-1])
        if hi - lo < 4 * len(keys) + 1024:  # dense ids: a direct lookup table
            if self._table is None:
                first = np.concatenate(([True], keys[1:] != keys[:-1]))
                table = np.full(hi - lo + 1, -1, dtype=np.int64)
                table[keys[first] - lo] = self._pos[first]
                self._table = table
            inside = (refs >= lo) & (refs <= hi)
            if inside.all():  # the usual case: no masked copies of the references
                for a in range(0, len(refs), _BLOCK):  # by blocks: no full-size temporary
                    np.take(self._table, refs[a : a + _BLOCK] - lo, out=out[a : a + _BLOCK])
                return out
            out[inside] = self._table[refs[inside] - lo]
            return out
        at = np.minimum(np.searchsorted(keys, refs), len(keys) - 1)
        hit = keys[at] == refs
        out[hit] = self._pos[at[hit]]
        return out

    def find(self, refs: Array, unusable: Mask) -> npt.NDArray[np.int64]:
        if self._keys is not None and refs.dtype == np.int64:
            out = self._rows_of(refs)
            out[unusable] = -1
            return out
        info = description(refs)
        if self._keys is not None and info is not None and info.ints is not None:
            out = self._rows_of(info.ints)  # ints (and None) a loader described
            out[unusable] = -1
            if info.null is not None:
                out[info.null] = -1
            return out
        out = np.full(len(refs), -1, dtype=np.int64)
        if self._keys is not None and refs.dtype == object:
            sel = np.flatnonzero(~unusable)
            vals = refs[sel].tolist()
            if set(map(type, vals)) <= {int}:
                try:
                    ints = np.array(vals, dtype=np.int64)
                except OverflowError:
                    pass
                else:
                    out[sel] = self._rows_of(ints)
                    return out
        if self._dict is None:
            assert self._keys is not None
            d: dict[Hashable, int] = {}
            for k, p in zip(self._keys.tolist(), self._pos.tolist(), strict=True):
                d.setdefault(k, p)
            self._dict = d
        d = self._dict
        for i in np.flatnonzero(~unusable).tolist():
            out[i] = d.get(refs[i], -1)
        return out


def _later_duplicates(
    keys: Array, usable: Mask, second: Array | None = None
) -> npt.NDArray[np.int64]:
    """For each row, the row of the first occurrence of its key (or key pair) when it is a
    later occurrence; -1 otherwise (and for unusable rows)."""
    n = len(keys)
    first = np.full(n, -1, dtype=np.int64)
    rows = np.flatnonzero(usable)
    if not len(rows):
        return first
    if keys.dtype == np.int64 and (second is None or second.dtype == np.int64):
        k = keys[rows]
        if second is None and bool((k[1:] > k[:-1]).all()):
            return first  # in strictly increasing order (a primary key): no duplicate
        cols = (rows, k) if second is None else (rows, second[rows], k)
        order = np.lexsort(cols)
        sk = k[order]
        same = sk[1:] == sk[:-1]
        if second is not None:
            s2 = second[rows][order]
            same &= s2[1:] == s2[:-1]
        start = np.concatenate(([True], ~same))
        group_first = rows[order][np.maximum.accumulate(np.where(start, np.arange(len(rows)), 0))]
        dup = ~start
        first[rows[order][dup]] = group_first[dup]
        return first
    seen: dict[Hashable, int] = {}
    for i in rows.tolist():
        key: Hashable = keys[i] if second is None else (keys[i], second[i])
        j = seen.setdefault(key, i)
        if j != i:
            first[i] = j
    return first


def _ids(w: _Work, col: str, *, nullable: bool, what: str = "id") -> tuple[Array, Mask]:
    """A column of ids, normalised: (values, unusable). Values are int64 when every row is
    an int, else an object array (None where unusable). Bad types are refused here."""
    n = w.n
    arr = w.cols.get(col)
    if arr is None:
        return np.full(n, None, dtype=object), np.ones(n, dtype=bool)
    kind = arr.dtype.kind
    if kind == "i" or (kind == "u" and arr.dtype.itemsize < 8):
        return arr.astype(np.int64, copy=False), np.zeros(n, dtype=bool)
    if kind == "U":
        return arr.astype(object), np.zeros(n, dtype=bool)
    if kind == "O":  # the common cases without a per-value branch
        info = description(arr)
        if info is not None and info.ints is not None and info.null is not None:
            # ints (and None) a loader described: no value to look at
            if not info.null.any():
                return info.ints.copy(), np.zeros(n, dtype=bool)
            if not nullable:
                w.bad(info.null, lambda i: f"{col} is missing")
            return arr, info.null.copy()
        kinds = _types(arr)
        if kinds == {str}:
            return arr, np.zeros(n, dtype=bool)
        if kinds == {int}:
            try:
                return np.array(arr.tolist(), dtype=np.int64), np.zeros(n, dtype=bool)
            except OverflowError:
                pass
        if nullable and kinds == {str, type(None)}:
            return arr, _none_mask(arr, kinds)
        if kinds == {int, type(None)}:  # ints with nulls (nullable references)
            null = _none_mask(arr, kinds)
            try:  # every int within int64 (else the per-value path below refuses some)
                np.array(arr[~null].tolist(), dtype=np.int64)
            except OverflowError:
                pass
            else:
                if not nullable:
                    w.bad(null, lambda i: f"{col} is missing")
                return arr.copy(), null
    null = np.zeros(n, dtype=bool)
    badm = np.zeros(n, dtype=bool)
    out = np.empty(n, dtype=object)
    if kind == "f":
        null = np.isnan(arr)
        with np.errstate(invalid="ignore"):
            badm = ~null & (~np.isfinite(arr) | (arr != np.floor(arr)) | (np.abs(arr) >= 2.0**63))
        ok = ~null & ~badm
        out[ok] = arr[ok].astype(np.int64).tolist() if ok.any() else []
        values = arr.astype(object)
    elif kind in "uOb":
        values = arr.astype(object) if kind != "O" else arr
        for i, v in enumerate(values.tolist()):
            v = _py(v)
            if _is_null(v):
                null[i] = True
            elif isinstance(v, str):
                out[i] = v
            elif isinstance(v, bool):
                badm[i] = True
            elif isinstance(v, int):
                if -(2**63) <= v <= _I64_MAX:
                    out[i] = v
                else:
                    badm[i] = True
            elif isinstance(v, float) and v.is_integer() and abs(v) < 2.0**63:
                out[i] = int(v)
            else:
                badm[i] = True
    else:
        values = arr.astype(object)
        badm[:] = True
    w.bad(badm, lambda i: f"{col} = {_py(values[i])!r} is not an int or str {what}")
    if not nullable:
        w.bad(null, lambda i: f"{col} is missing")
    unusable = null | badm
    if not unusable.any() and all(type(v) is int for v in out.tolist()):
        return np.array(out.tolist(), dtype=np.int64), unusable
    return out, unusable


def _compact(ids: Array) -> Array:
    """An object column of ids that are all ints -> int64."""
    info = description(ids)
    if info is not None and info.ints is not None and info.null is not None:
        return info.ints if not info.null.any() else ids
    if ids.dtype == object and all(type(v) is int for v in ids.tolist()):
        return np.array(ids.tolist(), dtype=np.int64)
    return ids


def _nullable_ids(ids: Array) -> Array:
    """A nullable reference column as checked tables hold it: an object array (None =
    none), described by its ints when they are all ints, so that a build maps them
    without looking at the objects."""
    if ids.dtype == object:
        return ids
    if ids.dtype == np.int64:
        return describe(
            ids.astype(object),
            ObjectColumn(frozenset({int}), ints=ids, null=np.zeros(len(ids), dtype=bool)),
        )
    return ids.astype(object)


def _ref(
    w: _Work,
    col: str,
    values: Array,
    unusable: Mask,
    parent: _Work,
    what: str,
) -> npt.NDArray[np.int64]:
    """Rows of ``parent`` that ``values`` name (-1 where none / unusable); refuses dangling
    references (a rule) and references to refused rows (dependent)."""
    if not parent.present:
        w.bad(
            ~unusable,
            lambda i: f"{col} = {_py(values[i])!r} refers to no {what} (no {parent.name} table)",
        )
        return np.full(w.n, -1, dtype=np.int64)
    rows = parent.index(kept=True).find(values, unusable)
    miss = (rows < 0) & ~unusable
    if miss.any():
        assert parent.keep is not None
        if parent.keep.all():
            w.bad(miss, lambda i: f"{col} = {_py(values[i])!r} refers to no {what}")
        else:
            anywhere = parent.index(kept=False).find(values, ~miss)
            w.bad(
                miss & (anywhere < 0),
                lambda i: f"{col} = {_py(values[i])!r} refers to no {what}",
            )
            w.bad(
                miss & (anywhere >= 0),
                lambda i: (
                    f"{col} = {_py(values[i])!r} is {parent.label} row "
                    f"{int(anywhere[i]) - parent.base}, which was refused"
                ),
                dependent=True,
            )
    return rows


def _floats(w: _Work, col: str) -> tuple[npt.NDArray[np.floating[Any]], Mask] | None:
    """(values with NaN for null, null mask); non-numbers refused. None when absent.
    Values are float64, or float32 when given so."""
    arr = w.cols.get(col)
    if arr is None:
        return None
    if arr.dtype == np.float32:  # kept as given (each float32 is a float64): no copy
        return arr, np.isnan(arr)
    if arr.dtype.kind in "fiub":
        vals = arr.astype(np.float64)
        return vals, np.isnan(vals)
    vals = np.full(w.n, np.nan)
    null = np.zeros(w.n, dtype=bool)
    badm = np.zeros(w.n, dtype=bool)
    if arr.dtype.kind == "O":
        for i, v in enumerate(arr.tolist()):
            v = _py(v)
            if _is_null(v):
                null[i] = True
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                vals[i] = float(v) if abs(v) < 1e308 or isinstance(v, float) else np.inf
            else:
                badm[i] = True
    else:
        badm[:] = True
    w.bad(badm, lambda i: f"{col} = {_py(arr[i])!r} is not a number")
    return vals, null & ~badm


def _ints(
    w: _Work, col: str, lo: int, hi: int, *, null_value: int | None
) -> npt.NDArray[np.int64] | None:
    """An int column in [lo, hi]; null allowed (as ``null_value``) when given. None when
    absent."""
    arr = w.cols.get(col)
    if arr is None:
        return None
    n = w.n
    out = np.zeros(n, dtype=np.int64)
    null = np.zeros(n, dtype=bool)
    badm = np.zeros(n, dtype=bool)
    if arr.dtype.kind == "i" or (arr.dtype.kind == "u" and arr.dtype.itemsize < 8):
        out = arr.astype(np.int64, copy=null_value is not None)  # nulls are written below
        if null_value is not None:
            null = out == null_value
    elif arr.dtype.kind == "f":
        null = np.isnan(arr)
        with np.errstate(invalid="ignore"):
            badm = ~null & (~np.isfinite(arr) | (arr != np.floor(arr)) | (np.abs(arr) >= 2.0**63))
        ok = ~null & ~badm
        out[ok] = arr[ok].astype(np.int64)
    elif arr.dtype.kind in "uOb":
        for i, v in enumerate(arr.tolist()):
            v = _py(v)
            if _is_null(v) or (null_value is not None and type(v) is int and v == null_value):
                null[i] = True
            elif isinstance(v, bool):
                badm[i] = True
            elif isinstance(v, int) and -(2**63) < v <= _I64_MAX:
                out[i] = v
            elif isinstance(v, float) and v.is_integer() and abs(v) < 2.0**63:
                out[i] = int(v)
            else:
                badm[i] = True
    else:
        badm[:] = True
    w.bad(badm, lambda i: f"{col} = {_py(arr[i])!r} is not an integer")
    if null_value is None:
        w.bad(null & ~badm, lambda i: f"{col} is missing")
    rng = ~null & ~badm & ((out < lo) | (out > hi))
    w.bad(rng, lambda i: f"{col} = {int(out[i])} is out of range [{lo}, {hi}]")
    if null_value is not None:
        out[null] = null_value
    return out


def _time_column(w: _Work, col: str) -> npt.NDArray[np.int64] | None:
    arr = w.cols.get(col)
    if arr is None:
        return None
    if arr.dtype == object:  # the null sentinel of checked tables means null here too
        arr = _object_array([None if type(v) is int and v == NULL_TIME else v for v in arr])
    try:
        out = times(arr, w.name, col)
    except DataError:
        out = None
    if out is not None:
        return out
    out = np.full(w.n, NULL_TIME, dtype=np.int64)
    badm = np.zeros(w.n, dtype=bool)
    for i, v in enumerate(arr.tolist()):
        try:
            out[i] = time_value(v, w.name, col, i)
        except DataError:
            badm[i] = True
    w.bad(badm, lambda i: f"{col} = {_py(arr[i])!r} is not a time")
    return out


def _texts(w: _Work, col: str, *, required: bool = False) -> Array | None:
    arr = w.cols.get(col)
    if arr is None:
        return None
    if arr.dtype == object and _types(arr) <= {str, type(None)}:
        if required:
            null = _is_none(arr)
            w.bad(null, lambda i: f"{col} is missing")
        return arr
    out = np.empty(w.n, dtype=object)
    null = np.zeros(w.n, dtype=bool)
    badm = np.zeros(w.n, dtype=bool)
    for i, v in enumerate(arr.tolist()):
        if isinstance(v, str):
            out[i] = str(v)
        elif _is_null(v):
            null[i] = True
        else:
            badm[i] = True
    w.bad(badm, lambda i: f"{col} = {_py(arr[i])!r} is not text")
    if required:
        w.bad(null, lambda i: f"{col} is missing")
    return out


def _json_values(w: _Work, col: str, want: type) -> Array | None:
    """tags (list of str) / metadata (dict): Python values or their JSON text."""
    arr = w.cols.get(col)
    if arr is None:
        return None
    out = np.empty(w.n, dtype=object)
    why: dict[int, str] = {}
    for i, v in enumerate(arr.tolist()):
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if not isinstance(v, (list, tuple, dict, str)) and _is_null(v):
            continue
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError as exc:
                why[i] = f"{col} is not valid JSON ({exc})"
                continue
        if want is list:
            if isinstance(v, tuple):
                v = list(v)
            if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
                why[i] = f"{col} = {v!r} is not a list of str"
                continue
        elif not isinstance(v, dict):
            why[i] = f"{col} = {v!r} is not a dict"
            continue
        else:
            try:
                v = json.loads(json.dumps(v))
            except (TypeError, ValueError) as exc:
                why[i] = f"{col} cannot be stored as JSON ({exc})"
                continue
        out[i] = v
    badm = np.zeros(w.n, dtype=bool)
    badm[list(why)] = True
    w.bad(badm, lambda i: why[i])
    return out


def _names(w: _Work, col: str, vocab: tuple[str, ...], what: str) -> Array | None:
    """Status / source names or codes -> names (object array)."""
    arr = w.cols.get(col)
    if arr is None:
        return None
    badm = np.zeros(w.n, dtype=bool)
    index = {name: name for name in vocab}
    info = description(arr)
    out: Array
    if arr.dtype.kind in "iu":
        codes = arr.astype(np.int64)
        badm = (codes < 0) | (codes >= len(vocab))
        names = np.empty(len(vocab) + 1, dtype=object)
        names[:-1] = vocab
        small: npt.NDArray[np.signedinteger[Any]] = np.where(badm, -1, codes).astype(
            np.int8 if len(vocab) < 127 else np.int32
        )
        types: frozenset[type] = frozenset({str, type(None)} if badm.any() else {str})
        out = describe(names[small], ObjectColumn(types, codes=small, values=tuple(vocab)))
    elif (
        info is not None
        and info.codes is not None
        and info.values is not None
        and all(isinstance(v, str) for v in info.values)
    ):  # a dictionary column: each distinct value looked up once
        known = np.array([v in index for v in info.values] + [False], dtype=bool)
        badm = ~known[info.codes]  # code -1 (None) is the last: refused as missing
        out = arr
    elif arr.dtype == object and _types(arr) == {str}:
        vals = arr.tolist()
        if not set(vals) <= index.keys():  # the distinct names first: usually all known
            badm = ~np.fromiter(map(index.__contains__, vals), dtype=bool, count=len(vals))
        out = arr
    else:
        out = np.empty(w.n, dtype=object)
        for i, v in enumerate(arr.tolist()):
            v = _py(v)
            if isinstance(v, str) and v in index:
                out[i] = v
            elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(vocab):
                out[i] = vocab[v]
            else:
                badm[i] = True
    w.bad(
        badm,
        lambda i: (
            f"{col} is missing"
            if _is_null(_py(arr[i]))
            else f"{col} = {_py(arr[i])!r} is an unknown {what} (known: {list(vocab)!r})"
        ),
    )
    return out


def _tenant_values(w: _Work) -> tuple[Array, Mask, Mask]:
    """(values as int / str objects, is-int mask, unusable mask) of a tenant column."""
    arr = w.cols["tenant"]
    n = w.n
    out = np.empty(n, dtype=object)
    is_int = np.zeros(n, dtype=bool)
    badm = np.zeros(n, dtype=bool)
    null = np.zeros(n, dtype=bool)
    if arr.dtype.kind in "iu":
        big = arr.astype(np.int64) if arr.dtype.itemsize < 8 or arr.dtype.kind == "i" else arr
        badm = (big < 0) | (big > _MAX_TENANT)
        out[:] = arr.tolist()
        is_int[:] = True
        if big.dtype == np.int64:  # described by its ints: no object is looked at again
            out = describe(
                out, ObjectColumn(frozenset({int}), ints=big, null=np.zeros(n, dtype=bool))
            )
    else:
        for i, v in enumerate(arr.tolist()):
            v = _py(v)
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if _is_null(v):
                null[i] = True
            elif isinstance(v, str):
                out[i] = v
            elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _MAX_TENANT:
                out[i] = v
                is_int[i] = True
            else:
                badm[i] = True
    w.bad(
        badm,
        lambda i: f"tenant = {_py(arr[i])!r} is not a tenant (a str or an int in [0, 2**24))",
    )
    w.bad(null, lambda i: "tenant is missing")
    return out, is_int, badm | null


def _check_tenants(en: _Work, ch: _Work) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Tenant codes of entities and chunks (-1 where unusable), for comparisons."""
    given = [w for w in (en, ch) if "tenant" in w.cols]
    if not given:
        return np.zeros(en.n, dtype=np.int64), np.zeros(ch.n, dtype=np.int64)
    parts = {id(w): _tenant_values(w) for w in given}
    # One kind of tenant for the graph: that of the first usable value.
    kind_int: bool | None = None
    for w in given:
        vals, is_int, unusable = parts[id(w)]
        ok = np.flatnonzero(~unusable)
        if len(ok):
            kind_int = bool(is_int[ok[0]])
            break
    codes: dict[int, npt.NDArray[np.int64]] = {}
    if kind_int is None:
        for w in given:
            codes[id(w)] = np.full(w.n, -1, dtype=np.int64)
            w.out["tenant"] = parts[id(w)][0]
    else:
        first_kind = "an int" if kind_int else "a str"
        for w in given:
            vals, is_int, unusable = parts[id(w)]
            wrong = ~unusable & (is_int != kind_int)

            def why(i: int, vals: Array = vals) -> str:
                return f"tenant = {vals[i]!r} is not {first_kind}, as the graph's other tenants are"

            w.bad(wrong, why)
            parts[id(w)] = (vals, is_int, unusable | wrong)
            w.out["tenant"] = vals
        usable_vals = [parts[id(w)][0][~parts[id(w)][2]] for w in given]
        if kind_int:
            for w in given:
                vals, _, unusable = parts[id(w)]
                c = np.full(w.n, -1, dtype=np.int64)
                c[~unusable] = np.array(vals[~unusable].tolist(), dtype=np.int64)
                codes[id(w)] = c
        else:
            vocab = {t: k for k, t in enumerate(sorted(set(np.concatenate(usable_vals).tolist())))}
            for w in given:
                vals, _, unusable = parts[id(w)]
                c = np.full(w.n, -1, dtype=np.int64)
                for i in np.flatnonzero(~unusable).tolist():
                    c[i] = vocab[vals[i]]
                codes[id(w)] = c
    for w, other in ((en, ch), (ch, en)):
        if id(w) in codes:
            continue
        oc = codes[id(other)]
        distinct = np.unique(oc[oc >= 0])
        if len(distinct) > 1 and w.n:
            raise DataError(
                f"{w.name} have no tenant column but {other.name} have {len(distinct)} "
                f"tenants; give {w.name}.tenant"
            )
        default = int(distinct[0]) if len(distinct) else 0
        codes[id(w)] = np.full(w.n, default, dtype=np.int64)
    return codes[id(en)], codes[id(ch)]


def _graph_tenants(
    ent: Array | None, ch: Array | None, n_ent: int, n_ch: int
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32], list[Hashable]]:
    """Tenant codes and names of checked tables, for ``KnowledgeGraph.from_arrays``.

    Int tenants are their own codes (names ``0..max``, as ``from_arrays`` does); str
    tenants are coded in sorted order over entities and chunks together."""
    if ent is None and ch is None:
        return np.zeros(n_ent, np.uint32), np.zeros(n_ch, np.uint32), [0]
    given = [v for v in (ent, ch) if v is not None]
    if all(
        isinstance(v, np.ndarray) and v.dtype.kind in "iu" and (not len(v) or int(v.min()) >= 0)
        for v in given
    ):
        # int tenants (checked: in [0, 2**24)): their own codes
        top = max((int(v.max()) for v in given if len(v)), default=0)
        ec = ent.astype(np.uint32) if ent is not None else np.zeros(n_ent, np.uint32)
        cc = ch.astype(np.uint32) if ch is not None else np.zeros(n_ch, np.uint32)
        if ent is None and n_ch:
            ec = np.full(n_ent, cc[0], np.uint32)
        if ch is None and n_ent:
            cc = np.full(n_ch, ec[0], np.uint32)
        return ec, cc, list(range(top + 1))
    values = [np.asarray(v, dtype=object) for v in given]
    allv = np.concatenate(values).tolist() if values else []
    if all(isinstance(v, (int, np.integer)) for v in allv):
        names: list[Hashable] = list(range(int(max(allv)) + 1 if allv else 1))

        def code(v: Array | None, n: int) -> npt.NDArray[np.uint32]:
            return np.asarray(v, dtype=np.uint32) if v is not None else np.zeros(n, np.uint32)

    else:
        names = sorted(set(allv))
        lookup = {t: k for k, t in enumerate(names)}

        def code(v: Array | None, n: int) -> npt.NDArray[np.uint32]:
            if v is None:
                return np.zeros(n, np.uint32)
            return np.array([lookup[t] for t in v.tolist()], dtype=np.uint32)

    ec = code(ent, n_ent)
    cc = code(ch, n_ch)
    # A table without tenants is in the single tenant of the other (as check() decided).
    if ent is None and n_ch:
        ec = np.full(n_ent, cc[0], np.uint32)
    if ch is None and n_ent:
        cc = np.full(n_ch, ec[0], np.uint32)
    return ec, cc, names


@dataclass
class _Checked:
    tables: GraphTables
    report: LoadReport
    keep: dict[str, Mask]
    embeddings_keep: list[Mask]


def _check(
    t: GraphTables,
    on_bad: OnBad,
    *,
    base: Mapping[str, int] | None = None,
    label: Mapping[str, str] | None = None,
) -> _Checked:
    """Check ``t``; rows of table ``x`` are reported as ``row - base[x]`` under
    ``label[x]`` (updates report their new rows only)."""
    if on_bad not in ("raise", "skip"):
        raise ParameterError(f"invalid parameter on_bad: {on_bad!r} is not 'raise' or 'skip'")
    base = base or {}
    label = label or {}
    w = {
        name: _Work(name, t.table(name), label.get(name, name), base.get(name, 0))
        for name in TABLES
    }
    ch, en, fa, me, al = (w[n] for n in TABLES)
    en_t, ch_t = _check_tenants(en, ch)  # entities and chunks together
    if ch.present:
        _check_chunks(ch)
    ch.finish()
    _check_entities(en, ch, en_t, ch_t)
    en.finish()
    _check_facts(fa, en, en_t, t)
    fa.finish()
    if me.present:
        _check_mentions(me, ch, en, ch_t, en_t)
    me.finish()
    if al.present:
        _check_aliases(al, en)
    al.finish()
    emb_works, emb_out = _check_embeddings(t.embeddings, w, base, label)

    works = [en, fa, ch, me, al, *emb_works]
    report = LoadReport(tuple(x.report() for x in works if x.present), on_bad)
    if on_bad == "raise" and not report.ok:
        raise BadDataError(report)
    keep = {name: x.keep for name, x in w.items() if x.keep is not None}
    entities, facts = _kept(en), _kept(fa)
    assert entities is not None and facts is not None
    out = GraphTables(
        entities=entities,
        facts=facts,
        chunks=_kept(ch),
        mentions=_kept(me),
        aliases=_kept(al),
        embeddings=emb_out,
        statuses=t.statuses,
        sources=t.sources,
    )
    return _Checked(out, report, keep, [x.keep for x in emb_works if x.keep is not None])


def _key(w: _Work, col: str = "id") -> tuple[Array, Mask]:
    """The table's own id column: normalised, unique (later duplicates refused)."""
    ids, unusable = _ids(w, col, nullable=False)
    w.key, w.key_unusable, w.row_ids = ids, unusable, ids
    w.out[col] = ids
    _unique(w, ids, ~unusable)
    return ids, unusable


def _unique(
    w: _Work, keys: Array, usable: Mask, second: Array | None = None, what: str = "id"
) -> None:
    dup = _later_duplicates(keys, usable, second)

    def why(i: int) -> str:
        value = _py(keys[i]) if second is None else _py(second[i])
        return f"duplicate {what} {value!r} ({_first_at(w, int(dup[i]))})"

    w.bad(dup >= 0, why)


def _first_at(w: _Work, row: int) -> str:
    """Where the first occurrence of a duplicate is: a given row, or a stored one."""
    if row < w.base:
        return f"already stored: {w.name} row {row}"
    return f"first at row {row - w.base}"


def _in_unit_interval(
    w: _Work, col: str, *, nullable: bool
) -> npt.NDArray[np.floating[Any]] | None:
    conv = _floats(w, col)
    if conv is None:
        return None
    c, null = conv
    if not nullable:
        w.bad(null, lambda i: f"{col} is missing or NaN")
    with np.errstate(invalid="ignore"):
        rng = ~null & ~((c >= 0.0) & (c <= 1.0))
    w.bad(rng, lambda i: f"{col} = {float(c[i])!r} is not in [0, 1]")
    return c


#: Rows per block of the row-wise passes that would otherwise make full-size temporaries.
_BLOCK = 1 << 20


def _narrow(codes: npt.NDArray[np.int64]) -> npt.NDArray[np.signedinteger[Any]]:
    """Tenant codes as int32 when they fit (they do when checked: < 2**24, -1)."""
    if not len(codes) or (int(codes.min()) >= -(2**31) and int(codes.max()) < 2**31):
        return codes.astype(np.int32)
    return codes


def _cross_tenant(
    w: _Work,
    left: npt.NDArray[np.int64],
    left_t: npt.NDArray[np.int64],
    right: npt.NDArray[np.int64],
    right_t: npt.NDArray[np.int64],
    why: Callable[[int], str],
) -> None:
    if not len(left_t) or not len(right_t):
        return  # no row refers to anything
    left_t, right_t = _narrow(left_t), _narrow(right_t)
    cross = np.zeros(w.n, dtype=bool)
    for a in range(0, w.n, _BLOCK):  # by blocks: no full-size temporaries
        lr, rr = left[a : a + _BLOCK], right[a : a + _BLOCK]
        # Rows -1 read the last tenant, masked by the rows' own test.
        lt, rt = left_t[lr], right_t[rr]
        cross[a : a + _BLOCK] = (lr >= 0) & (rr >= 0) & (lt >= 0) & (rt >= 0) & (lt != rt)
    w.bad(cross, why)


def _check_chunks(ch: _Work) -> None:
    _key(ch)
    for col in ("text", "scope", "category"):
        ch.out[col] = _texts(ch, col)
    ch.out["tags"] = _json_values(ch, "tags", list)
    ch.out["metadata"] = _json_values(ch, "metadata", dict)
    for col in ("created_at", "expires_at", "last_accessed"):
        ch.out[col] = _time_column(ch, col)
    ch.out["confidence"] = _in_unit_interval(ch, "confidence", nullable=True)
    ch.out["access_count"] = _ints(ch, "access_count", 0, _I64_MAX, null_value=None)


def _check_entities(
    en: _Work, ch: _Work, en_t: npt.NDArray[np.int64], ch_t: npt.NDArray[np.int64]
) -> None:
    _key(en)
    for col in ("name", "type", "description"):
        en.out[col] = _texts(en, col)
    en.out["created_at"] = _time_column(en, "created_at")
    if "primary_chunk" in en.cols:
        pc, pc_unusable = _ids(en, "primary_chunk", nullable=True, what="chunk id")
        en.out["primary_chunk"] = pc.astype(object)
        rows = _ref(en, "primary_chunk", pc, pc_unusable, ch, "chunk")
        _cross_tenant(
            en,
            np.arange(en.n, dtype=np.int64),
            en_t,
            rows,
            ch_t,
            lambda i: f"primary_chunk = {_py(pc[i])!r} is in another tenant than the entity",
        )


def _check_facts(fa: _Work, en: _Work, en_t: npt.NDArray[np.int64], t: GraphTables) -> None:
    if "id" in fa.cols:
        fids, _ = _key(fa)
    else:  # the ids are the rows, so that dropping rows renumbers nothing
        fids = np.arange(fa.n, dtype=np.int64)
        fa.row_ids = fids
        fa.out["id"] = fids
    subj, s_unusable = _ids(fa, "subject", nullable=False, what="entity id")
    s_rows = _ref(fa, "subject", subj, s_unusable, en, "entity")
    fa.out["subject"] = subj
    if "object" in fa.cols:
        obj, o_unusable = _ids(fa, "object", nullable=True, what="entity id")
        o_rows = _ref(fa, "object", obj, o_unusable, en, "entity")
        _cross_tenant(
            fa,
            s_rows,
            en_t,
            o_rows,
            en_t,
            lambda i: (
                f"subject {_py(subj[i])!r} and object {_py(obj[i])!r} are in different tenants"
            ),
        )
        fa.out["object"] = _nullable_ids(obj)
        del o_rows
    del s_rows  # row numbers of every fact: not needed any more
    if "predicate" in fa.cols:
        fa.out["predicate"] = _predicates(fa)
    if "object_value" in fa.cols:
        fa.out["object_value"] = _literals(fa)
    fa.out["description"] = _texts(fa, "description")
    fa.out["confidence"] = _in_unit_interval(fa, "confidence", nullable=False)
    stren = _floats(fa, "strength")
    if stren is not None:
        s, null = stren
        fa.bad(null, lambda i: "strength is missing or NaN")
        with np.errstate(invalid="ignore"):
            rng = ~null & ~(np.isfinite(s) & (s >= 0.0) & (s <= _F32_MAX))
        fa.bad(rng, lambda i: f"strength = {float(s[i])!r} is not a finite number >= 0")
        fa.out["strength"] = s
    fa.out["status"] = _names(fa, "status", t.statuses, "status")
    fa.out["source"] = _names(fa, "source", t.sources, "source")
    fa.out["access_count"] = _ints(fa, "access_count", 0, _U32_LIMIT, null_value=None)
    for col in ("last_accessed", "created_at", "valid_from", "valid_to"):
        fa.out[col] = _time_column(fa, col)
    vf, vt = fa.out.get("valid_from"), fa.out.get("valid_to")
    if vf is not None and vt is not None:
        inverted = (vf != NULL_TIME) & (vt != NULL_TIME) & (vf > vt)
        fa.bad(inverted, lambda i: f"valid_from = {vf[i]} is after valid_to = {vt[i]}")
    fa.out["sequence"] = _ints(fa, "sequence", -(2**63) + 1, _I64_MAX, null_value=NULL_SEQUENCE)


def _check_mentions(
    me: _Work,
    ch: _Work,
    en: _Work,
    ch_t: npt.NDArray[np.int64],
    en_t: npt.NDArray[np.int64],
) -> None:
    mc, mc_unusable = _ids(me, "chunk", nullable=False, what="chunk id")
    ment, ment_unusable = _ids(me, "entity", nullable=False, what="entity id")
    me.row_ids = None
    c_rows = _ref(me, "chunk", mc, mc_unusable, ch, "chunk")
    e_rows = _ref(me, "entity", ment, ment_unusable, en, "entity")
    _cross_tenant(
        me,
        c_rows,
        ch_t,
        e_rows,
        en_t,
        lambda i: f"chunk {_py(mc[i])!r} and entity {_py(ment[i])!r} are in different tenants",
    )
    dup = _later_duplicates(c_rows, (c_rows >= 0) & (e_rows >= 0), e_rows)
    me.bad(
        dup >= 0,
        lambda i: (
            f"duplicate mention of entity {_py(ment[i])!r} by chunk {_py(mc[i])!r} "
            f"({_first_at(me, int(dup[i]))})"
        ),
    )
    me.out["chunk"], me.out["entity"] = mc, ment
    me.out["count"] = _ints(me, "count", 1, _U32_LIMIT, null_value=None)


def _check_aliases(al: _Work, en: _Work) -> None:
    ae, ae_unusable = _ids(al, "entity", nullable=False, what="entity id")
    a_rows = _ref(al, "entity", ae, ae_unusable, en, "entity")
    alias = _texts(al, "alias", required=True)
    assert alias is not None
    have = np.array([a is not None for a in alias.tolist()], dtype=bool)
    empty = np.array([a == "" for a in alias.tolist()], dtype=bool)
    al.bad(empty, lambda i: "alias is empty")
    usable = (a_rows >= 0) & have
    _unique(al, a_rows.astype(object), usable, alias, what="alias")
    al.out["entity"], al.out["alias"] = ae, alias
    al.key, al.key_unusable = alias, ~have


def _predicates(fa: _Work) -> Array:
    arr = fa.cols["predicate"]
    if arr.dtype.kind in "iu":
        codes = arr.astype(np.int64)
        fa.bad(
            (codes < 0) | (codes > 2**16 - 1),
            lambda i: f"predicate = {int(codes[i])} is not a predicate code in [0, 65535]",
        )
        return codes
    if arr.dtype == object and _types(arr) == {str}:
        return arr
    out = np.empty(fa.n, dtype=object)
    badm = np.zeros(fa.n, dtype=bool)
    for i, v in enumerate(arr.tolist()):
        if isinstance(v, str):
            out[i] = str(v)
        else:
            badm[i] = True
    fa.bad(
        badm,
        lambda i: (
            "predicate is missing"
            if _is_null(arr[i])
            else f"predicate = {_py(arr[i])!r} is not text (or all int codes)"
        ),
    )
    return out


def _literals(fa: _Work) -> Array:
    arr = fa.cols["object_value"]
    if arr.dtype == object and _types(arr) <= {str, type(None)}:
        # every value is text or null: nothing to refuse or convert
        return arr if description(arr) is not None else arr.copy()
    out = np.empty(fa.n, dtype=object)
    badm = np.zeros(fa.n, dtype=bool)
    for i, v in enumerate(arr.tolist()):
        v = _py(v)
        if _is_null(v):
            continue
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            badm[i] = True
        elif isinstance(v, int) and not -(2**63) <= v <= _I64_MAX:
            badm[i] = True
        else:
            out[i] = v
    fa.bad(badm, lambda i: f"object_value = {_py(arr[i])!r} is not a str, int or float")
    return out


def _check_embeddings(
    sets: list[EmbeddingSet],
    w: Mapping[str, _Work],
    base: Mapping[str, int],
    label: Mapping[str, str],
) -> tuple[list[_Work], list[EmbeddingSet]]:
    works: list[_Work] = []
    mats: list[npt.NDArray[np.float64] | None] = []
    dims: list[npt.NDArray[np.int64]] = []
    rows_of: list[npt.NDArray[np.int64]] = []
    for j, es in enumerate(sets):
        name = f"embeddings[{j}]"
        x = _Work(name, {"id": es.ids}, label.get(name, name), base.get(name, 0))
        ids, unusable = _ids(x, "id", nullable=False)
        x.row_ids = ids
        x.out["id"] = ids
        parent = w[_PARENT[es.kind]]
        what = {"entity": "entity", "chunk": "chunk", "alias": "alias"}[es.kind]
        rows_of.append(_ref(x, "id", ids, unusable, parent, what))
        v = es.vectors
        if v.ndim == 2:
            try:
                mat = np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError):
                raise DataError(f"{name}: vectors must hold numbers, got dtype {v.dtype}") from None
            mats.append(mat)
            dims.append(np.full(len(v), v.shape[1], dtype=np.int64))
        else:
            d = np.zeros(len(v), dtype=np.int64)
            bad_vec = np.zeros(len(v), dtype=bool)
            for i, vec in enumerate(v.tolist()):
                try:
                    a = np.asarray(vec, dtype=np.float64)
                except (TypeError, ValueError):
                    bad_vec[i] = True
                    continue
                if a.ndim != 1:
                    bad_vec[i] = True
                d[i] = len(a) if a.ndim == 1 else 0
            x.bad(bad_vec, lambda i: "vector is not a 1-D sequence of numbers")
            mats.append(None)
            dims.append(d)
        works.append(x)
    # The dimension of each (kind, model): that of most of its vectors (ties: the first).
    groups: dict[tuple[str, str | None], list[int]] = {}
    for j, es in enumerate(sets):
        groups.setdefault((es.kind, es.model), []).append(j)
    out: list[EmbeddingSet] = []
    expected: dict[int, int] = {}
    for (kind, model), members in groups.items():
        alld = np.concatenate([dims[j] for j in members])
        alld = alld[alld > 0]
        if len(alld):
            vals, first_at, counts = np.unique(alld, return_index=True, return_counts=True)
            best = np.lexsort((first_at, -counts))[0]
            dim = int(vals[best])
        else:
            dim = 0
        for j in members:
            expected[j] = dim
        # one vector per (kind, model, id)
        sizes = [len(rows_of[j]) for j in members]
        offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        rows = np.concatenate([rows_of[j] for j in members])
        dup = _later_duplicates(rows, rows >= 0)
        for k, j in enumerate(members):
            x = works[j]
            d = dup[offsets[k] : offsets[k + 1]]
            ids_j = x.out["id"]

            def why(
                i: int,
                d: npt.NDArray[np.int64] = d,
                j: int = j,
                ids_j: Array | None = ids_j,
                kind: str = kind,
                model: str | None = model,
                members: list[int] = members,
                offsets: npt.NDArray[np.int64] = offsets,
            ) -> str:
                m = int(np.searchsorted(offsets, d[i], "right")) - 1
                where = f"row {int(d[i] - offsets[m])}"
                if members[m] != j:
                    where += f" of embeddings[{members[m]}]"
                rid = None if ids_j is None else _py(ids_j[i])
                return f"duplicate vector of {kind} {rid!r} for model {model!r} (first at {where})"

            x.bad(d >= 0, why)
    for j, es in enumerate(sets):
        x = works[j]
        dim = expected[j]
        wrong = dims[j] != dim

        def why_dim(
            i: int, d: npt.NDArray[np.int64] = dims[j], dim: int = dim, model: str | None = es.model
        ) -> str:
            return (
                f"vector has dimension {int(d[i])}; model {model!r} has "
                f"dimension {dim} (that of most of its vectors)"
            )

        x.bad(wrong & (dims[j] > 0), why_dim)
        x.bad(wrong & (dims[j] == 0), lambda i: "vector is empty")
        given = mats[j]
        if given is not None:
            mat = given
        else:
            mat = np.zeros((x.n, max(dim, 0)), dtype=np.float64)
            for i, vec in enumerate(es.vectors.tolist()):
                if dims[j][i] == dim and dim > 0:
                    mat[i] = np.asarray(vec, dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            finite = (
                np.isfinite(mat.astype(np.float32)).all(axis=1)
                if mat.shape[1]
                else np.ones(x.n, dtype=bool)
            )
        x.bad(
            ~finite & ~wrong,
            lambda i: "vector holds NaN or infinity (in float32)",
        )
        keep = x.finish()
        all_ids = x.out["id"]
        assert all_ids is not None
        ids = all_ids[keep]
        if mat.shape[1] == dim:
            vectors = np.ascontiguousarray(mat[keep], dtype=np.float32)
        else:  # every row has the wrong dimension
            vectors = np.zeros((0, dim), dtype=np.float32)
        if len(ids):  # a set left without vectors is no set (as a store reads it back)
            out.append(EmbeddingSet(es.kind, _compact(ids), vectors, es.model))
    return works, out


def _kept(x: _Work) -> dict[str, Array] | None:
    """The normalised columns of a table's kept rows (the given columns only)."""
    if not x.present:
        return None
    assert x.keep is not None
    out: dict[str, Array] = {}
    keep_all = bool(x.keep.all())
    given = [a for a in x.cols.values() if isinstance(a, np.ndarray)]
    for col in COLUMNS[x.name]:
        v = x.out.get(col)
        if v is None:
            continue
        if not keep_all:
            v = take(v, x.keep)
        elif v.flags.writeable and any(np.may_share_memory(v, a) for a in given):
            v = v.copy()  # every row kept: share only what nobody can change
        if col in ("id", "subject", "chunk", "entity", "tenant"):
            v = _compact(v)
        out[col] = v
    return out

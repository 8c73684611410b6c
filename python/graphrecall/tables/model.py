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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataError, ParameterError
from .columns import take
from .constants import (
    COLUMNS,
    DEFAULT_SOURCES,
    DEFAULT_STATUSES,
    REQUIRED,
    TABLES,
    OnBad,
)
from .embeddings import EmbeddingSet, to_column
from .faults import column_error
from .report import BadDataError, LoadReport
from .rules import (
    _check_aliases,
    _check_chunks,
    _check_embeddings,
    _check_entities,
    _check_facts,
    _check_mentions,
)
from .tenants import _check_tenants
from .work import (
    Array,
    Mask,
    _compact,
    _n_rows,
    _Work,
)

if TYPE_CHECKING:
    from ..graph import KnowledgeGraph

# ------------------------------------------------------------------------------ the model


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
                raise DataError(
                    f"embeddings: {e!r} is not an EmbeddingSet",
                    table="embeddings",
                    kind="invalid_value",
                )
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
        * tenants: an int in ``[0, 2**24)`` or a str, one kind for the whole graph (the
          graph codes the distinct tenants densely, in sorted order); a fact,
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
        checked = check_tables(self, on_bad)
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
        return checked.build_graph(release=True), report

    def build_graph(self, *, release: bool = False) -> KnowledgeGraph:
        """Build the graph of tables that :meth:`check` returned, without checking again
        (:meth:`KnowledgeGraph.from_tables <graphrecall.KnowledgeGraph.from_tables>`).

        Args:
            release: Take each column out of these tables as it is encoded (they are left
                empty), so that tables nobody else holds shrink while the graph grows.

        Raises:
            DataError: If the tables were not checked and hold bad rows.
        """
        # The graph sits above the tables: imported on use, so this room never loads it.
        from ..graph import KnowledgeGraph

        return KnowledgeGraph.from_tables(self, release=release)


# ------------------------------------------------------------------------------ conversion


def _table(name: str, cols: Mapping[str, Any]) -> dict[str, Array]:
    if not isinstance(cols, Mapping):
        raise DataError(
            f"{name} must be a mapping of column name -> column, got {cols!r}",
            table=name,
            kind="invalid_value",
        )
    unknown = [c for c in cols if c not in COLUMNS[name]]
    if unknown:
        raise DataError(
            f"{name} has unknown column{'s' * (len(unknown) > 1)} {unknown!r}; "
            f"known: {list(COLUMNS[name])!r}",
            table=name,
            column=unknown[0],
            kind="invalid_value",
            input=unknown[0],
            ctx={"unknown": unknown},
        )
    missing = [c for c in REQUIRED[name] if c not in cols]
    if missing:
        raise DataError(
            f"{name} has no {missing[0]!r} column", table=name, column=missing[0], kind="missing"
        )
    out = {c: to_column(v, name, c) for c, v in cols.items()}
    lengths = {c: len(v) for c, v in out.items()}
    if len(set(lengths.values())) > 1:
        first = REQUIRED[name][0]
        for c, n in lengths.items():
            if n != lengths[first]:
                raise column_error(
                    name,
                    c,
                    f"has {n} rows, but {name}.{first} has {lengths[first]}",
                    kind="length_mismatch",
                    ctx={"expected": lengths[first], "got": n},
                )
    return out


def _vocabulary(names: Sequence[str], what: str) -> tuple[str, ...]:
    out = tuple(names)
    if not out or len(set(out)) != len(out) or not all(isinstance(n, str) for n in out):
        raise DataError(
            f"{what} must be distinct names (str), got {list(out)!r}",
            column=what,
            kind="invalid_value",
            input=list(out),
        )
    return out


@dataclass
class CheckedTables:
    """What :func:`check_tables` found: the kept rows as tables, the report, and which
    rows of each table (and of each embedding set) were kept."""

    tables: GraphTables
    report: LoadReport
    keep: dict[str, Mask]
    embeddings_keep: list[Mask]


def check_tables(
    t: GraphTables,
    on_bad: OnBad,
    *,
    base: Mapping[str, int] | None = None,
    label: Mapping[str, str] | None = None,
) -> CheckedTables:
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
    return CheckedTables(out, report, keep, [x.keep for x in emb_works if x.keep is not None])


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

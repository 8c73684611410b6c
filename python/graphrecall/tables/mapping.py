"""`ColumnMapping`: read the user's own tables and columns instead of converting their data.

graphrecall's tables are ``entities``, ``facts``, ``chunks``, ``mentions`` and ``aliases``
with the column names of :class:`~graphrecall.tables.GraphTables`. A mapping says,
per table and per column, what the user's store calls them::

    ColumnMapping(
        tables={"facts": "relationships"},
        columns={
            "facts.subject": "source_entity_id",
            "facts.object": "target_entity_id",
            "facts.predicate": "relationship_type",
            "facts.strength": "weight",
            "entities.tenant": "vault_id",
        },
        values={"facts.status": {"active": "confirmed", "ended": "archived"}},
    )

Loaders put table and column names into SQL text, so every name is validated as an SQL
identifier when the mapping is built (letters, digits and ``_``, not starting with a digit,
at most 63 characters; a table may be schema-qualified as ``schema.table``) and quoted when
used; a name that is not one raises :class:`~graphrecall.errors.ParameterError` naming it.
Values (a tenant filter) are always bound parameters, never text.

Resolution, per column of our table:

* a column named in ``columns`` must exist in the user's table (a loader raises a
  :class:`~graphrecall.errors.DataError` naming the table and column otherwise), unless its
  key is listed in ``optional``;
* a column mapped to ``None`` is never read;
* any other column is read when the user's table has a column of our name.

``mentions`` and ``aliases`` may also be read from a list column of another table: with
``tables={"mentions": "chunks"}`` and ``columns={"mentions.chunk": "id",
"mentions.entity": "mentioned_entity_ids"}`` every element of the list becomes one mention.
Embeddings are the pseudo-columns ``entities.embedding`` / ``chunks.embedding`` (a list or
fixed-size-list of numbers per row) with an optional ``*.embedding_model`` column; rows
without a vector are not embedded.

:data:`PRESETS` holds mappings for the schemas of the source designs (``"personal_kg"``,
``"writeros"``, ``"hybrid_graphrag"``, ``"zeph"``); ``ColumnMapping.preset(name).merged(...)``
adapts one.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import DataError, ParameterError
from .constants import COLUMNS as _TABLE_COLUMNS

__all__ = [
    "COLUMNS",
    "LIST_COLUMNS",
    "MAX_IDENTIFIER_LENGTH",
    "PRESETS",
    "REQUIRED",
    "TABLES",
    "TIME_COLUMNS",
    "ColumnMapping",
    "frame_mapping",
    "quote_identifier",
    "validate_identifier",
]

#: Our tables, in load order.
TABLES: tuple[str, ...] = ("entities", "facts", "chunks", "mentions", "aliases")

#: Our columns per table (``embedding`` / ``embedding_model`` become ``EmbeddingSet``s;
#: ``facts.tenant`` is only used to filter by tenant: the core takes a fact's tenant from
#: its subject).
_EXTRA: Mapping[str, tuple[str, ...]] = {
    "entities": ("embedding", "embedding_model"),
    "facts": ("tenant",),
    "chunks": ("embedding", "embedding_model"),
}
COLUMNS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {t: cols + _EXTRA.get(t, ()) for t, cols in _TABLE_COLUMNS.items()}
)

#: Columns a table cannot be loaded without.
REQUIRED: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "entities": ("id",),
        "facts": ("subject",),
        "chunks": ("id",),
        "mentions": ("chunk", "entity"),
        "aliases": ("entity", "alias"),
    }
)

#: Columns converted to int64 seconds (null -> graphrecall's null time).
TIME_COLUMNS: frozenset[str] = frozenset(
    {"created_at", "last_accessed", "valid_from", "valid_to", "expires_at"}
)

#: Columns that may hold a list per row: the table is then exploded on them.
LIST_COLUMNS: frozenset[str] = frozenset({"mentions.entity", "mentions.chunk", "aliases.alias"})

#: Longest identifier part accepted (PostgreSQL truncates longer names silently).
MAX_IDENTIFIER_LENGTH = 63

_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def validate_identifier(name: object, what: str, *, qualified: bool = False) -> str:
    """Check that ``name`` is a plain SQL identifier (or ``schema.table`` when ``qualified``).

    Args:
        name: The name to check.
        what: What it names, for the message (``"table of facts"``, ``"column facts.subject"``).
        qualified: Accept one ``schema.`` prefix.

    Returns:
        ``name`` unchanged.

    Raises:
        ParameterError: Naming ``what`` and the refused name.
    """
    if not isinstance(name, str):
        raise ParameterError(f"invalid {what}: {name!r} is not a string")
    parts = name.split(".")
    if len(parts) > (2 if qualified else 1):
        shape = "an identifier or schema.identifier" if qualified else "an identifier"
        raise ParameterError(f"invalid {what}: {name!r} is not {shape}")
    for part in parts:
        if len(part) > MAX_IDENTIFIER_LENGTH:
            raise ParameterError(
                f"invalid {what}: {name!r} is longer than {MAX_IDENTIFIER_LENGTH} characters"
            )
        if not _PART.match(part):
            raise ParameterError(
                f"invalid {what}: {name!r} is not an SQL identifier (letters, digits and _, "
                "not starting with a digit)"
            )
    return name


def quote_identifier(name: str) -> str:
    """Quote a validated identifier for SQL (``schema.table`` -> ``"schema"."table"``).

    Raises:
        ParameterError: ``name`` is not a valid (optionally schema-qualified) identifier.
    """
    validate_identifier(name, "identifier", qualified=True)
    return ".".join(f'"{p}"' for p in name.split("."))


def _split_key(key: object, what: str) -> tuple[str, str]:
    if not isinstance(key, str) or key.count(".") != 1:
        raise ParameterError(
            f"invalid {what} key {key!r}: expected 'table.column', e.g. 'facts.strength'"
        )
    table, col = key.split(".")
    if table not in COLUMNS:
        raise ParameterError(
            f"invalid {what} key {key!r}: unknown table {table!r} (known: {list(TABLES)!r})"
        )
    if col not in COLUMNS[table]:
        raise ParameterError(
            f"invalid {what} key {key!r}: {table} has no column {col!r} "
            f"(known: {list(COLUMNS[table])!r})"
        )
    return table, col


@dataclass(frozen=True)
class ColumnMapping:
    """Names of the user's tables and columns, and optional value maps.

    Attributes:
        tables: Our table -> the user's table (``"facts" -> "relationships"``, or
            ``"analytics.relationships"``). Unnamed tables keep our names.
        columns: ``"table.column"`` (ours) -> the user's column, or ``None`` to never read
            it. Several of our columns may read the same user column.
        values: ``"table.column"`` -> {the user's value: ours}, applied after reading
            (e.g. status names); values not in the map pass through unchanged.
        optional: Keys of ``columns`` that may be missing from the user's table, and
            names of our tables (``"chunks"``) named in ``tables`` that the user's store may
            lack. ``entities`` and ``facts`` are always required; any other table not named
            in ``tables`` is read when the store has it under our name.

    Raises:
        ParameterError: An unknown table or column key, or a name that is not a valid SQL
            identifier (the message names it).
    """

    tables: Mapping[str, str] = field(default_factory=dict)
    columns: Mapping[str, str | None] = field(default_factory=dict)
    values: Mapping[str, Mapping[Any, Any]] = field(default_factory=dict)
    optional: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not isinstance(self.tables, Mapping):
            raise ParameterError(f"invalid parameter tables: {self.tables!r} is not a mapping")
        if not isinstance(self.columns, Mapping):
            raise ParameterError(f"invalid parameter columns: {self.columns!r} is not a mapping")
        if not isinstance(self.values, Mapping):
            raise ParameterError(f"invalid parameter values: {self.values!r} is not a mapping")
        tables: dict[str, str] = {}
        for ours, theirs in self.tables.items():
            if ours not in COLUMNS:
                raise ParameterError(
                    f"invalid tables key {ours!r}: unknown table (known: {list(TABLES)!r})"
                )
            tables[ours] = validate_identifier(theirs, f"table of {ours}", qualified=True)
        columns: dict[str, str | None] = {}
        for key, col in self.columns.items():
            _split_key(key, "columns")
            columns[key] = None if col is None else validate_identifier(col, f"column {key}")
        values: dict[str, Mapping[Any, Any]] = {}
        for key, vmap in self.values.items():
            _split_key(key, "values")
            if not isinstance(vmap, Mapping):
                raise ParameterError(f"invalid values[{key!r}]: {vmap!r} is not a mapping")
            values[key] = MappingProxyType(dict(vmap))
        if isinstance(self.optional, str):
            raise ParameterError(
                f"invalid parameter optional: {self.optional!r} is a str, not a set of keys"
            )
        optional = frozenset(self.optional)
        for key in optional:
            if key not in COLUMNS:
                _split_key(key, "optional")
        object.__setattr__(self, "tables", MappingProxyType(tables))
        object.__setattr__(self, "columns", MappingProxyType(columns))
        object.__setattr__(self, "values", MappingProxyType(values))
        object.__setattr__(self, "optional", optional)

    # ------------------------------------------------------------------ lookups

    def table(self, ours: str) -> str:
        """The user's name of our table ``ours``."""
        return self.tables.get(ours, ours)

    def column(self, table: str, ours: str) -> str | None:
        """The user's name of our column (None when mapped to None)."""
        key = f"{table}.{ours}"
        return self.columns[key] if key in self.columns else ours

    def table_required(self, ours: str) -> bool:
        """True when the user's store must hold this table (a loader raises otherwise)."""
        if ours in ("entities", "facts"):
            return True
        return ours in self.tables and ours not in self.optional

    def is_explicit(self, table: str, ours: str) -> bool:
        """True when the user named this column and it must therefore exist."""
        key = f"{table}.{ours}"
        return self.columns.get(key) is not None and key not in self.optional

    def resolve(self, table: str, available: Iterable[str]) -> dict[str, str]:
        """Our column -> the user's column, for the columns to read from a table.

        Args:
            table: Our table name.
            available: The user's table's column names.

        Raises:
            DataError: A column named by the mapping (or a required column) is missing;
                the message names the user's table and column.
        """
        have = list(available)
        have_set = set(have)
        folded: dict[str, str | None] = {}
        for c in have:  # case-insensitive fallback (SQL), only where unambiguous
            folded[c.lower()] = None if c.lower() in folded else c
        out: dict[str, str] = {}
        renamed = self._edge_list(table, have_set, folded)
        for ours in COLUMNS[table]:
            theirs = renamed.get(ours, self.column(table, ours))
            if theirs is None:
                continue
            found = theirs if theirs in have_set else folded.get(theirs.lower())
            if found is not None:
                out[ours] = found
            elif self.is_explicit(table, ours) or ours in REQUIRED[table]:
                how = "the mapping names" if self.is_explicit(table, ours) else "required"
                raise DataError(
                    f"table {self.table(table)!r} ({table}) has no column {theirs!r} "
                    f"({how}: {table}.{ours}); its columns are {have!r}",
                    table=table,
                    column=ours,
                    kind="missing",
                    input=theirs,
                )
        return out

    def _edge_list(
        self, table: str, have: set[str], folded: Mapping[str, str | None]
    ) -> dict[str, str | None]:
        """The edge-list convention: a facts table with ``source`` and ``target`` columns and
        no ``subject`` (Microsoft GraphRAG's relationships, networkx / Neo4j edge exports)
        reads ``source`` -> ``subject`` and ``target`` -> ``object``, and ``source`` is then
        not a provenance column. Only where the mapping names none of these itself."""
        if table != "facts" or any(
            k in self.columns for k in ("facts.subject", "facts.object", "facts.source")
        ):
            return {}

        def has(c: str) -> str | None:
            return c if c in have else folded.get(c)

        if has("subject") is not None or has("source") is None:
            return {}
        if has("target") is None:
            raise DataError(
                f"table {self.table(table)!r} (facts) has a 'source' column but no 'subject' "
                "and no 'target': name the fact's subject column (e.g. "
                "ColumnMapping(columns={'facts.subject': 'source'}), and 'facts.source': None "
                "if 'source' is not a provenance)",
                table=table,
                column="subject",
                kind="missing",
                input="source",
            )
        return {"subject": has("source"), "object": has("target"), "source": None}

    def value_map(self, table: str, ours: str) -> Mapping[Any, Any] | None:
        """The value map of a column, if any."""
        return self.values.get(f"{table}.{ours}")

    # ------------------------------------------------------------------ building

    def merged(
        self,
        other: ColumnMapping | None = None,
        *,
        tables: Mapping[str, str] | None = None,
        columns: Mapping[str, str | None] | None = None,
        values: Mapping[str, Mapping[Any, Any]] | None = None,
        optional: Iterable[str] = (),
    ) -> ColumnMapping:
        """A new mapping: this one overridden by ``other`` and the keyword arguments.

        A column given again stops being optional unless listed in ``optional`` again.
        """
        t = dict(self.tables)
        c = dict(self.columns)
        v: dict[str, Mapping[Any, Any]] = dict(self.values)
        opt = set(self.optional)
        for m in (other, ColumnMapping(tables or {}, columns or {}, values or {}, frozenset())):
            if m is None:
                continue
            t.update(m.tables)
            c.update(m.columns)
            v.update(m.values)
            opt -= set(m.columns)
            opt |= m.optional
        opt |= set(optional)
        return ColumnMapping(t, c, v, frozenset(opt))

    @classmethod
    def preset(cls, name: str) -> ColumnMapping:
        """The mapping of a source design's schema (see :data:`PRESETS`).

        Raises:
            ParameterError: An unknown preset name.
        """
        try:
            return PRESETS[name]
        except (KeyError, TypeError):
            raise ParameterError(
                f"invalid parameter preset: {name!r} is not one of {sorted(PRESETS)!r}"
            ) from None

    def __repr__(self) -> str:
        parts = []
        for name in ("tables", "columns", "values"):
            val = getattr(self, name)
            if val:
                parts.append(f"{name}={dict(val)!r}")
        if self.optional:
            parts.append(f"optional={sorted(self.optional)!r}")
        return f"ColumnMapping({', '.join(parts)})"


def _preset(
    tables: Mapping[str, str],
    required: Mapping[str, str],
    optional: Mapping[str, str | None],
    values: Mapping[str, Mapping[Hashable, Any]] | None = None,
) -> ColumnMapping:
    """A preset: ``required`` columns must exist; ``optional`` ones are read when present."""
    return ColumnMapping(
        tables=dict(tables),
        columns={**required, **optional},
        values=dict(values or {}),
        optional=frozenset(k for k, v in optional.items() if v is not None)
        | frozenset(t for t in tables if t not in ("entities", "facts")),
    )


#: Mappings for the schemas the source designs show (the README's table of designs).
#:
#: * ``personal_kg``: the ADR's DuckDB tables ``entities`` (``user_id`` = tenant, ``embedding``)
#:   and ``facts`` (``subject_id``, ``object_id``, ``predicate``, ``object_value``,
#:   ``confidence``, ``source``, ``status``, ``access_count``, ``last_accessed``,
#:   ``user_id``).
#: * ``writeros``: WriterOS's ``entities`` (Entity: ``vault_id``, ``entity_type``,
#:   ``primary_source_chunk_id``, ``embedding``), ``relationships`` (Relationship:
#:   ``source_entity_id``, ``target_entity_id``, ``relationship_type``, ``strength``,
#:   ``extraction_confidence``, ``established_at_sequence``) and ``chunks`` (Chunk:
#:   ``content``, ``embedding``, ``embedding_model``, mentions from the list column
#:   ``mentioned_entity_ids``).
#: * ``hybrid_graphrag``: ``kg_entities``, ``kg_relationships`` (``source_entity_id``,
#:   ``target_entity_id``, ``type``, ``description``, ``weight`` 1-10 as strength) and
#:   ``kg_entity_chunks`` (``entity_id``, ``chunk_id``, ``mention_count``).
#: * ``zeph``: zeph's SQLite tables ``graph_entities`` (``entity_type``, ``summary``) and
#:   ``graph_edges`` (``source_entity_id``, ``target_entity_id``, ``relation``, ``fact``,
#:   ``confidence``, ``valid_from``, ``valid_to``, ``created_at``).
PRESETS: Mapping[str, ColumnMapping] = MappingProxyType(
    {
        "personal_kg": _preset(
            tables={"entities": "entities", "facts": "facts"},
            required={"facts.subject": "subject_id"},
            optional={
                "entities.tenant": "user_id",
                "facts.object": "object_id",
                "facts.tenant": "user_id",
            },
        ),
        "writeros": _preset(
            tables={
                "entities": "entities",
                "facts": "relationships",
                "chunks": "chunks",
                "mentions": "chunks",
            },
            required={
                "facts.subject": "source_entity_id",
                "facts.object": "target_entity_id",
                "mentions.chunk": "id",
                "mentions.entity": "mentioned_entity_ids",
            },
            optional={
                "entities.tenant": "vault_id",
                "entities.type": "entity_type",
                "entities.primary_chunk": "primary_source_chunk_id",
                "facts.predicate": "relationship_type",
                "facts.confidence": "extraction_confidence",
                "facts.sequence": "established_at_sequence",
                "facts.description": "quote",
                "facts.tenant": "vault_id",
                "chunks.tenant": "vault_id",
                "chunks.text": "content",
            },
        ),
        "hybrid_graphrag": _preset(
            tables={
                "entities": "kg_entities",
                "facts": "kg_relationships",
                "mentions": "kg_entity_chunks",
            },
            required={
                "facts.subject": "source_entity_id",
                "facts.object": "target_entity_id",
                "mentions.chunk": "chunk_id",
                "mentions.entity": "entity_id",
            },
            optional={
                "facts.predicate": "type",
                "facts.strength": "weight",
                "mentions.count": "mention_count",
            },
        ),
        "zeph": _preset(
            tables={"entities": "graph_entities", "facts": "graph_edges"},
            required={
                "facts.subject": "source_entity_id",
                "facts.object": "target_entity_id",
                "facts.predicate": "relation",
            },
            optional={
                "entities.type": "entity_type",
                "entities.description": "summary",
                "facts.description": "fact",
            },
        ),
    }
)


def frame_mapping(columns: Mapping[str, Any] | ColumnMapping | None) -> ColumnMapping:
    """The :class:`ColumnMapping` of ``KnowledgeGraph.from_dataframes(columns=)``.

    A :class:`ColumnMapping` is used as given. A dict maps our column to the frame's: keys
    are ``"table.column"`` or a plain column name (for every table with that column; a
    qualified key wins), and keys naming no column of ours are ignored. Every column it names
    may be missing from the frame, and the names are not checked as SQL identifiers (frame
    columns never reach SQL), so the mapping is only for reading frames.
    """
    if columns is None:
        return ColumnMapping()
    if isinstance(columns, ColumnMapping):
        return columns
    named: dict[str, Any] = {}
    for table, cols in _TABLE_COLUMNS.items():
        for col in cols:
            key = f"{table}.{col}"
            if key in columns:
                named[key] = columns[key]
            elif col in columns:
                named[key] = columns[col]
    mapping = object.__new__(ColumnMapping)
    object.__setattr__(mapping, "tables", MappingProxyType({}))
    object.__setattr__(mapping, "columns", MappingProxyType(named))
    object.__setattr__(mapping, "values", MappingProxyType({}))
    object.__setattr__(mapping, "optional", frozenset(named))
    return mapping

"""The schema of the SQLite store: the DDL, the version numbers and the column classes
that the read and write conversions share."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

#: The schema version this module writes (3: version 2 plus the fact log, :data:`LOG_SCHEMA`).
SCHEMA_VERSION = 3
#: The schema versions this module reads (version 1 stores are read without checksums,
#: versions 1 and 2 write added facts straight into ``facts``).
SUPPORTED_SCHEMA_VERSIONS: tuple[int, ...] = (1, 2, 3)
#: ``PRAGMA application_id`` of a graphrecall store ("GREC").
APPLICATION_ID = 0x47524543

#: The columns of ``facts`` and of the fact log (their types, references and checks).
_FACT_COLUMNS = """
    id            NOT NULL PRIMARY KEY,
    subject       NOT NULL REFERENCES entities (id) DEFERRABLE INITIALLY DEFERRED,
    object        REFERENCES entities (id) DEFERRABLE INITIALLY DEFERRED,  -- NULL = literal
    predicate     NOT NULL DEFAULT 'related_to',  -- text (or an int code)
    object_value,                                 -- the literal: text, int or real
    description   TEXT,
    confidence    REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    strength      REAL NOT NULL DEFAULT 1.0 CHECK (strength >= 0),
    status        TEXT NOT NULL,
    source        TEXT NOT NULL,
    access_count  INTEGER NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    last_accessed INTEGER,
    created_at    INTEGER,
    valid_from    INTEGER,
    valid_to      INTEGER,
    sequence      INTEGER
"""

#: The DDL of the graph tables (schema versions 1 to 3; 2 adds :mod:`.checksum`, 3 adds
#: :data:`LOG_SCHEMA`).
SCHEMA = f"""
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE chunks (
    id            NOT NULL PRIMARY KEY,   -- int or text, kept as given
    tenant,                               -- int or text; NULL = no tenant column
    text          TEXT,
    scope         TEXT,                   -- scope / tier
    category      TEXT,
    tags          TEXT,                   -- JSON array of text
    metadata      TEXT,                   -- JSON object (goal / mission style metadata)
    created_at    INTEGER,                -- Unix seconds
    expires_at    INTEGER,
    confidence    REAL CHECK (confidence IS NULL OR confidence BETWEEN 0 AND 1),
    access_count  INTEGER NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    last_accessed INTEGER
);
CREATE TABLE entities (
    id            NOT NULL PRIMARY KEY,
    tenant,
    name          TEXT,
    type          TEXT,
    description   TEXT,
    primary_chunk REFERENCES chunks (id) DEFERRABLE INITIALLY DEFERRED,
    created_at    INTEGER
);
CREATE TABLE aliases (
    entity NOT NULL REFERENCES entities (id) DEFERRABLE INITIALLY DEFERRED,
    alias  TEXT NOT NULL,
    PRIMARY KEY (entity, alias)
);
CREATE TABLE facts ({_FACT_COLUMNS});
CREATE TABLE mentions (
    chunk NOT NULL REFERENCES chunks (id) DEFERRABLE INITIALLY DEFERRED,
    entity NOT NULL REFERENCES entities (id) DEFERRABLE INITIALLY DEFERRED,
    count INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1),
    PRIMARY KEY (chunk, entity)
);
CREATE TABLE embeddings (
    kind   TEXT NOT NULL CHECK (kind IN ('entity', 'chunk', 'alias')),
    id     NOT NULL,              -- entities.id, chunks.id or aliases.alias
    model  TEXT NOT NULL,         -- '' = unnamed
    dim    INTEGER NOT NULL CHECK (dim > 0),
    vector BLOB NOT NULL CHECK (length(vector) = 4 * dim),  -- float32, little-endian
    PRIMARY KEY (kind, model, id)
);
CREATE INDEX facts_subject ON facts (subject);
CREATE INDEX facts_object ON facts (object);
CREATE INDEX mentions_entity ON mentions (entity);
CREATE INDEX aliases_alias ON aliases (alias);
CREATE INDEX entities_primary_chunk ON entities (primary_chunk);
"""

#: The DDL of the fact log (schema version 3): added facts, acknowledged once their rows
#: here are committed, in the order they were added (rowid), with the columns, references
#: and checks of ``facts`` and no index but the ids' (a commit writes a few pages instead
#: of a random leaf of each ``facts`` index per fact). The trigger refuses an id that
#: ``facts`` holds, as ``facts``' own key would. :mod:`.log` folds the rows into ``facts``.
LOG_SCHEMA = f"""
CREATE TABLE facts_log ({_FACT_COLUMNS});
CREATE TRIGGER facts_log_unique_id BEFORE INSERT ON facts_log
WHEN EXISTS (SELECT 1 FROM facts WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'UNIQUE constraint failed: facts.id'); END;
CREATE TRIGGER facts_log_unique_id_update BEFORE UPDATE OF id ON facts_log
WHEN EXISTS (SELECT 1 FROM facts WHERE id = NEW.id)
BEGIN SELECT RAISE(ABORT, 'UNIQUE constraint failed: facts.id'); END;
"""

#: Tables in the order rows are deleted (children first); inserts go the other way.
_DELETE_ORDER = ("embeddings", "mentions", "aliases", "facts", "entities", "chunks")

_ID_COLUMNS = frozenset({"id", "subject", "chunk", "entity", "tenant"})
_NULLABLE_IDS = frozenset({"object", "primary_chunk"})
_TIME_COLUMNS = frozenset({"created_at", "expires_at", "last_accessed", "valid_from", "valid_to"})
_JSON_COLUMNS = frozenset({"tags", "metadata"})
#: Columns stored NOT NULL with a default, read back always.
_REQUIRED_ON_READ: Mapping[str, frozenset[str]] = {
    "entities": frozenset({"id"}),
    "facts": frozenset(
        {"id", "subject", "predicate", "confidence", "strength", "status", "source", "access_count"}
    ),
    "chunks": frozenset({"id", "access_count"}),
    "mentions": frozenset({"chunk", "entity", "count"}),
    "aliases": frozenset({"entity", "alias"}),
}


def statements(script: str) -> list[str]:
    """The statements of an SQL script, to run one by one inside an open transaction
    (``executescript`` would commit first; a trigger's body holds semicolons)."""
    out: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            out.append(pending)
            pending = ""
    return out

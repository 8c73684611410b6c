"""Load :class:`~graphrecall.tables.GraphTables` from PostgreSQL (with pgvector).

The user's tables and columns are named by a :class:`~graphrecall.storage.mapping.ColumnMapping`
(validated identifiers, quoted with ``psycopg.sql.Identifier``); the only value that enters
a query, the tenant, is a query parameter (bound by psycopg; in a ``COPY``, which takes no
server-side parameters, psycopg's quoted literal), never text formatted by us. All tables
are read in one read-only transaction (``REPEATABLE READ`` when the loader starts it, so
the tables are one consistent snapshot; inside a transaction of the caller's connection, a
savepoint rolled back at the end).

Each table is read with one ``COPY (SELECT ...) TO STDOUT (FORMAT csv)`` parsed by
``pyarrow.csv`` with the column types taken from the catalog, then converted like
:func:`~graphrecall.storage.arrow.load_arrow`. This beats ``cursor.fetchall()`` of the same
query: no Python object is made per numeric value, and the COPY's rows are drained from
libpq in one loop (``benches/results/postgres.md``). How PostgreSQL types are read:

* ``smallint`` / ``integer`` / ``bigint`` -> int64; ``real`` -> float32 (the stored value);
  ``double precision`` / ``numeric`` -> float64 (``numeric`` converted on the server);
  ``boolean`` -> bool;
* ``timestamp`` / ``timestamptz`` / ``date`` in a time column -> int64 seconds (the epoch
  computed on the server; ``infinity`` is reported by the check);
* pgvector ``vector`` in an ``embedding`` column -> ``float32 (n, d)`` matrices, read in
  its binary form (``vector_send``, hex in the CSV) and decoded for the whole column at
  once: exact, and faster than its text form; the ``pgvector`` Python package is not
  needed. ``halfvec`` and arrays of numbers (``real[]``,
  ``float8[]``) are parsed from their text by Arrow compute; ``bytea`` of little-endian
  float32 is read as blobs;
* an array in a list column (``mentions.entity``, ``mentions.chunk``, ``aliases.alias``,
  e.g. seed 001's ``chunks.mentioned_entity_ids uuid[]``) -> one row per element
  (``unnest`` on the server);
* a time column of another type is read as it is (ints as seconds, ISO-8601 text);
* other arrays (``tags text[]``) -> their JSON text; ``json`` / ``jsonb`` -> JSON text
  (:meth:`GraphTables.check` parses both); ``uuid``, enums and anything else -> text.

With ``tenant=`` only that tenant's rows are read (the filter is in the SQL, the tenant a
parameter): entities by their tenant column; facts by their own tenant column when the
mapping has one (``facts.tenant``), otherwise those whose subject is one of the tenant's
entities; chunks by their tenant column (or, without one, those mentioning the tenant's
entities); mentions and aliases of the tenant's entities.

The loaded tables are checked (``on_bad``) before they are returned: a
:class:`PostgresTables` carries the :class:`~graphrecall.tables.LoadReport`.

Needs ``psycopg`` 3 (``pip install "psycopg[binary]"``) and ``pyarrow``.

The package is laid out by concern: :mod:`.connection` (psycopg, the read-only snapshot),
:mod:`.catalog` (the user's tables and column types, how each column is selected),
:mod:`.copy_out` (``COPY`` through libpq, CSV parsing), :mod:`.vectors` (pgvector and
array values to Arrow lists) and :mod:`.load` (tenant filters, :func:`load_postgres`).
"""

from __future__ import annotations

from .load import CONNECT_TIMEOUT, MissingTableError, PostgresTables, load_postgres

__all__ = ["CONNECT_TIMEOUT", "MissingTableError", "PostgresTables", "load_postgres"]

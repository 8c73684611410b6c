"""A real PostgreSQL server with pgvector for the tests, started from Python by ``pgserver``.

:func:`start` runs a private server in a fresh temporary directory (a unix socket in its data
directory, no TCP port) and :meth:`PgServer.stop` stops it and removes the directory.

What pgserver needs, handled here:

* PostgreSQL refuses to run as root. Run as root, pgserver creates a system user
  ``pgserver`` (``useradd``), makes the data directory's parents traversable and runs
  ``initdb`` / ``pg_ctl`` as that user; run as anyone else, as that user. The data directory
  is a fresh ``mkdtemp`` directory under the system temp dir either way (short enough for
  a unix socket path).
* Importing pgserver asks platformdirs for a runtime directory, which warns
  (``RuntimeDirWarning``, an error under pytest's ``filterwarnings = error``) when
  ``XDG_RUNTIME_DIR`` is unset or not a private directory. The import runs with
  ``XDG_RUNTIME_DIR`` pointing at a private (0700) directory inside the server's temp dir,
  restored afterwards, and that one warning silenced, for the import only.

Run as a script, this measures :func:`graphrecall.storage.postgres.load_postgres` on a
seed-000-shaped ``facts`` table (``python tests/pg_server.py --rows 1000000``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any


class ServerError(RuntimeError):
    """The PostgreSQL test server could not be started."""


def _import_pgserver(runtime_dir: Path) -> ModuleType:
    """Import pgserver with a private runtime dir and its platformdirs warning silenced."""
    old = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(runtime_dir)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
            import pgserver
    finally:
        if old is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = old
    return pgserver


@dataclass
class PgServer:
    """A running server: ``uri`` connects as the superuser ``postgres`` to ``postgres``."""

    root: Path
    uri: str
    handle: Any

    def stop(self) -> None:
        """Stop the server and remove its directory."""
        try:
            self.handle.cleanup()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start() -> PgServer:
    """Start a private PostgreSQL server with the ``vector`` extension created.

    Raises:
        ServerError: pgserver is missing, the server did not start (its log is in the
            message) or pgvector is unavailable.
    """
    root = Path(tempfile.mkdtemp(prefix="graphrecall-pg-"))
    runtime = root / "run"
    runtime.mkdir(mode=0o700)
    pgdata = root / "pgdata"
    handle = None
    try:
        try:
            pgserver = _import_pgserver(runtime)
        except ImportError as exc:
            raise ServerError(f"the pgserver package is not installed ({exc})") from exc
        try:
            handle = pgserver.get_server(pgdata, cleanup_mode="stop")
        except Exception as exc:
            log = pgdata / "log"
            text = log.read_text(errors="replace")[-2000:] if log.is_file() else "(no log)"
            who = "root (pgserver runs it as user 'pgserver')" if os.geteuid() == 0 else "non-root"
            raise ServerError(
                f"pgserver could not start PostgreSQL in {pgdata} as {who}: "
                f"{type(exc).__name__}: {exc}\nserver log:\n{text}"
            ) from exc
        uri = handle.get_uri()
        import psycopg

        try:
            with psycopg.connect(uri, autocommit=True, connect_timeout=10) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            raise ServerError(
                f"PostgreSQL started but CREATE EXTENSION vector failed: {exc}"
            ) from exc
        return PgServer(root, uri, handle)
    except BaseException:
        if handle is not None:
            handle.cleanup()
        shutil.rmtree(root, ignore_errors=True)
        raise


# ---------------------------------------------------------------------------- benchmark


def _bench(rows: int, entities: int, repeat: int) -> None:  # pragma: no cover - a script
    import psycopg
    from graphrecall.storage.mapping import ColumnMapping
    from graphrecall.storage.postgres import load_postgres

    server = start()
    try:
        with psycopg.connect(server.uri, autocommit=True) as conn:
            conn.execute(
                "CREATE TABLE entities AS SELECT 'e' || g AS id, 'u' || (g % 4) AS user_id, "
                f"'Entity ' || g AS name FROM generate_series(0, {entities - 1}) g"
            )
            conn.execute(
                "CREATE TABLE facts AS SELECT g AS id, "
                f"'e' || (g % {entities}) AS subject_id, "
                "CASE WHEN g % 10 = 0 THEN NULL "
                f"ELSE 'e' || ((g + 4 * (g % 997) + 4) % {entities}) END AS object_id, "
                "'pred_' || (g % 50) AS predicate, "
                "CASE WHEN g % 10 = 0 THEN 'value ' || g END AS object_value, "
                "(g % 100) / 100.0::float8 AS confidence, "
                "(ARRAY['staged','confirmed','rejected','archived'])[1 + g % 4] AS status, "
                "(ARRAY['user_edit','file','system','conversation'])[1 + g % 4] AS source, "
                "(g % 17)::int AS access_count, "
                "timestamptz '2026-01-01' - make_interval(secs => g) AS last_accessed, "
                f"'u' || ((g % {entities}) % 4) AS user_id "
                f"FROM generate_series(0, {rows - 1}) g"
            )
            conn.execute("VACUUM ANALYZE")
        mapping = ColumnMapping.preset("seed000")
        for _ in range(repeat):
            t0 = time.perf_counter()
            tables = load_postgres(server.uri, mapping=mapping)
            t1 = time.perf_counter()
            graph = tables.build_graph()
            t2 = time.perf_counter()
            n = tables.n_rows("facts")
            print(
                f"load_postgres: {n} facts + {tables.n_rows('entities')} entities in "
                f"{t1 - t0:.2f} s ({n / (t1 - t0):,.0f} facts rows/s, read + convert + check); "
                f"build_graph {t2 - t1:.2f} s; {graph.n_facts if hasattr(graph, 'n_facts') else ''}"
            )
        t0 = time.perf_counter()
        tables = load_postgres(server.uri, mapping=mapping, tenant="u1")
        t1 = time.perf_counter()
        print(f"tenant 'u1': {tables.n_rows('facts')} facts in {t1 - t0:.2f} s")
    finally:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    _bench(args.rows, args.entities, args.repeat)

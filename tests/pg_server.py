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
import atexit
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
            # pgserver's own exit hook would take its lock file again, re-creating the
            # runtime dir inside the removed directory: it has nothing left to do.
            atexit.unregister(self.handle._cleanup)
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
            atexit.unregister(handle._cleanup)
        shutil.rmtree(root, ignore_errors=True)
        raise


# ---------------------------------------------------------------------------- benchmark


def _bench(
    rows: int, entities: int, chunks: int, dim: int, repeat: int
) -> None:  # pragma: no cover
    import pandas as pd
    import psycopg
    from graphrecall.storage.arrow import load_dataframes
    from graphrecall.storage.mapping import ColumnMapping
    from graphrecall.storage.postgres import load_postgres
    from graphrecall.storage.postgres.load import _load

    def best(f: Any) -> tuple[float, Any]:
        times, out = [], None
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = f()
            times.append(time.perf_counter() - t0)
        return min(times), out

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
            conn.execute(
                "CREATE SCHEMA vec; CREATE TABLE vec.entities (id int); "
                "CREATE TABLE vec.facts (subject int); "
                f"CREATE TABLE vec.chunks AS SELECT g AS id, 'chunk ' || g AS text, "
                f"(SELECT array_agg(sin(g * {dim} + k)::real) FROM generate_series(1, {dim}) k)"
                f"::vector({dim}) AS embedding FROM generate_series(0, {chunks - 1}) g"
            )
            conn.execute("VACUUM ANALYZE")
            m = ColumnMapping.preset("personal_kg")
            print(f"{rows:,} facts (11 columns) + {entities:,} entities, best of {repeat}:")
            t, tables = best(lambda: load_postgres(server.uri, mapping=m))
            n = tables.n_rows("facts")
            print(
                f"  load_postgres (connect, read, convert, check): {t:.2f} s = {n / t:,.0f} rows/s"
            )
            t_read, raw = best(lambda: _load(conn, m, None, None))
            print(f"    read + convert only: {t_read:.2f} s = {n / t_read:,.0f} rows/s")
            t_check, _ = best(lambda: raw.check())
            print(f"    GraphTables.check: {t_check:.2f} s")
            t_build, _ = best(lambda: tables.build_graph())
            print(f"  then build_graph: {t_build:.2f} s")
            t_tenant, mine = best(lambda: load_postgres(server.uri, mapping=m, tenant="u1"))
            print(f"  tenant 'u1' ({mine.n_rows('facts'):,} facts): {t_tenant:.2f} s")

            def naive() -> Any:
                frames = []
                for table in ("entities", "facts"):
                    cur = conn.execute(f"SELECT * FROM {table}")  # type: ignore[arg-type]
                    names = [d.name for d in cur.description or []]
                    frames.append(pd.DataFrame(cur.fetchall(), columns=names))
                return load_dataframes(*frames, mapping=m).check()

            t_naive, _ = best(naive)
            print(f"  baseline fetchall -> pandas -> load_dataframes + check: {t_naive:.2f} s")
            t_vec, loaded = best(lambda: load_postgres(server.uri, schema="vec"))
            [emb] = loaded.embeddings
            print(
                f"{chunks:,} chunks with vector({dim}): {t_vec:.2f} s = {chunks / t_vec:,.0f} "
                f"vectors/s ({emb.vectors.nbytes / t_vec / 1e6:,.0f} MB/s of float32)"
            )
    finally:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    _bench(args.rows, args.entities, args.chunks, args.dim, args.repeat)

"""A throw-away PostgreSQL database for a benchmark, configured before Django starts."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}


@contextmanager
def bench_database(name: str, *, sqlite: bool = False):
    """Create database ``name`` on the local PostgreSQL, point Django at it, migrate; drop it after.

    Falls back to a SQLite file (saying so) when PostgreSQL cannot be reached; ``sqlite`` uses one
    at once.
    """
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    engine = "postgresql"
    try:
        if sqlite:
            raise ConnectionRefusedError("SQLite asked for")
        import psycopg

        with psycopg.connect(**PG, dbname="postgres", autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        os.environ["DATABASE_URL"] = f"postgres://{PG['user']}@{PG['host']}:{PG['port']}/{name}"
    except Exception as exc:  # any failure means: no PostgreSQL here
        engine = "sqlite"
        path = ROOT / "var" / f"{name}.sqlite3"
        path.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{path}"
        why = "asked for" if sqlite else f"PostgreSQL unreachable ({exc.__class__.__name__})"
        print(f"{why}; using SQLite at {path}")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    try:
        yield engine
    finally:
        from django.db import connections

        connections.close_all()
        if engine == "postgresql":
            import psycopg

            with psycopg.connect(**PG, dbname="postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

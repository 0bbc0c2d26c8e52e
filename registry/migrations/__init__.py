"""Alembic migrations of the metadata schema, run programmatically at startup.

:func:`upgrade` brings a database to the newest revision inside one
transaction. Concurrent starters are serialised: on PostgreSQL by a
transaction-scoped advisory lock, on SQLite by ``BEGIN IMMEDIATE``; the
second finds the schema current and does nothing.

A new revision is a file in ``versions/`` (``alembic revision`` with
``script_location`` pointing here, or by hand after ``v0001_initial.py``).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

__all__ = ["HEAD", "upgrade"]

HEAD = "0008"
_ADVISORY_LOCK = 0x77677470  # "wgtp": one lock id for every registry replica


def upgrade(engine: Engine) -> None:
    """Upgrade the database behind ``engine`` to :data:`HEAD`."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).parent))
    with engine.connect() as conn:
        conn.info["wgt_write"] = True
        with conn.begin():
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY_LOCK})")
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

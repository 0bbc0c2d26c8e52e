"""The checksum log: sumdb_records, sumdb_hashes and the one-row sumdb_tree.

Every public version committed before this revision is appended, in the
order it was committed, so that no committed version is left unlogged.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from wgtpm.sumdb import record, tlog

    records = op.create_table(
        "sumdb_records",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("module", sa.String(512), nullable=False),
        sa.Column("version", sa.String(300), nullable=False),
        sa.Column("text", sa.LargeBinary, nullable=False),
        sa.UniqueConstraint("module", "version", name="uq_sumdb_records_module_version"),
    )
    hashes = op.create_table(
        "sumdb_hashes",
        sa.Column("idx", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("hash", sa.LargeBinary(32), nullable=False),
    )
    tree = op.create_table(
        "sumdb_tree",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("hash", sa.LargeBinary(32), nullable=False),
        sa.Column("vkey", sa.String(512)),
    )
    assert records is not None and hashes is not None and tree is not None

    # Backfill: the public versions committed so far, oldest first.
    conn = op.get_bind()
    rows = conn.execute(
        sa.text(
            "SELECT m.path, v.version, v.h1, v.mod_h1 FROM versions v"
            " JOIN modules m ON v.module_id = m.id"
            " WHERE v.committed AND NOT m.private ORDER BY v.id"
        )
    ).all()
    stored: list[bytes] = []

    def read(indexes: object) -> list[bytes]:
        return [stored[i] for i in indexes]  # type: ignore[attr-defined]

    recs = []
    for n, (path, version, h1, mod_h1) in enumerate(rows):
        text = record.record_text(path, version, h1, mod_h1)
        stored.extend(tlog.stored_hashes(n, text, read))
        recs.append({"id": n, "module": path, "version": version, "text": text})
    if recs:
        op.bulk_insert(records, recs)
        op.bulk_insert(hashes, [{"idx": i, "hash": h} for i, h in enumerate(stored)])
    op.bulk_insert(
        tree, [{"id": 1, "size": len(recs), "hash": tlog.tree_hash(len(recs), read), "vkey": None}]
    )


def downgrade() -> None:
    for table in ("sumdb_tree", "sumdb_hashes", "sumdb_records"):
        op.drop_table(table)

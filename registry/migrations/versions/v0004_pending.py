"""``pending_versions``: proxied versions whose index is answered and logged, files not all stored.

The Hub API (:mod:`registry.ondemand`) answers a version's metadata from its
checked index and fetches each file on its first request. The version's
wgt.sum lines are appended to the checksum log when the index is first
answered, in the transaction that inserts its row here; any replica serves
the version's files from that row (its index and wgt.mod are blobs) until
the version is committed, which deletes the row.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pending_versions",
        sa.Column("module", sa.String(512), primary_key=True),
        sa.Column("version", sa.String(300), primary_key=True),
        sa.Column("h1", sa.String(64), nullable=False),
        sa.Column("mod_h1", sa.String(64), nullable=False),
        sa.Column("index_sha256", sa.String(64), nullable=False),
        sa.Column("mod_sha256", sa.String(64), nullable=False),
        sa.Column("time", sa.String(64)),
        sa.Column("commit", sa.String(64)),
        sa.Column("created", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pending_versions")

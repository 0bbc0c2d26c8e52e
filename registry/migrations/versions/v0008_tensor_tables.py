"""``tensor_tables``: the tensor tables the registry computed for a version.

A committed public version whose release locks no tensor tables (a Hugging
Face repository, a GitHub release, an older publish) gets them computed from
its verified files on first request (:mod:`registry.tensortables`); they are
no file of the version (its h1 is the same wherever it was fetched from), so
this table names the blob holding them, one per version, written in the
transaction that appends their record to the checksum log.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tensor_tables",
        sa.Column("module", sa.String(512), primary_key=True),
        sa.Column("version", sa.String(300), primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("tensor_tables")

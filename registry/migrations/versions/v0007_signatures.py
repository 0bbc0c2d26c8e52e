"""``signatures``: the signature published beside a version.

A version's signature (a Sigstore bundle in OpenSSF model-signing's format
whose statement lists the index's files, :mod:`wgtpm.trust`) signs its index
and is not covered by its h1, so it is no file of the version: this table
names the blob holding it, one per committed version, written in the
transaction that commits the version (the first publish's signature stays; a
re-publish of the same h1 is a no-op).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signatures",
        sa.Column("module", sa.String(512), primary_key=True),
        sa.Column("version", sa.String(300), primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("signatures")

"""``attestations``: the SLSA provenance statement published beside a version.

A version's statement (an in-toto Statement v1 with an SLSA provenance v1
predicate in a DSSE envelope, :mod:`wgtpm.publish._slsa`) describes one build
of it and is not covered by its h1, so it is no file of the version: this
table names the blob holding it, one per committed version, written in the
transaction that commits the version (the first publish's statement stays;
a re-publish of the same h1 is a no-op).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attestations",
        sa.Column("module", sa.String(512), primary_key=True),
        sa.Column("version", sa.String(300), primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("attestations")

"""``upload_blobs``: the blobs each upload session sent itself.

Blobs are shared by sha256, so a commit may name a stored blob only when
its upload sent the bytes or its token can read a committed version that
lists them (:meth:`registry.service.Registry.commit`); otherwise naming a
private module's file hash would publish that file. A row here records that
upload ``upload_id`` streamed blob ``sha256`` and its hash matched; it goes
with its upload (``ON DELETE CASCADE``, and the store deletes it too).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "upload_blobs",
        sa.Column(
            "upload_id",
            sa.String(64),
            sa.ForeignKey("uploads.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("sha256", sa.String(64), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("upload_blobs")

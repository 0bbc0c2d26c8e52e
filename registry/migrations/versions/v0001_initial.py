"""The first schema: modules, versions, files, uploads, tokens.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "modules",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("path", sa.String(512), nullable=False, unique=True),
        sa.Column("private", sa.Boolean, nullable=False),
        sa.Column("created", sa.String(32), nullable=False),
    )
    op.create_table(
        "versions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("module_id", sa.Integer, sa.ForeignKey("modules.id"), nullable=False),
        sa.Column("version", sa.String(300), nullable=False),
        sa.Column("h1", sa.String(64), nullable=False),
        sa.Column("mod_h1", sa.String(64), nullable=False),
        sa.Column("index_sha256", sa.String(64), nullable=False),
        sa.Column("time", sa.String(64)),
        sa.Column("commit", sa.String(64)),
        sa.Column("committed", sa.Boolean, nullable=False),
        sa.Column("created", sa.String(32), nullable=False),
        sa.UniqueConstraint("module_id", "version", name="uq_versions_module_version"),
    )
    op.create_table(
        "files",
        sa.Column(
            "version_id",
            sa.Integer,
            sa.ForeignKey("versions.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("path", sa.Text, primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
    )
    op.create_index("ix_files_sha256", "files", ["sha256"])
    op.create_table(
        "uploads",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("module", sa.String(512), nullable=False),
        sa.Column("version", sa.String(300), nullable=False),
        sa.Column("h1", sa.String(64), nullable=False),
        sa.Column("index_sha256", sa.String(64), nullable=False),
        sa.Column("private", sa.Boolean, nullable=False),
        sa.Column("token_id", sa.String(64)),
        sa.Column("created", sa.String(32), nullable=False),
    )
    op.create_index("ix_uploads_created", "uploads", ["created"])
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("secret_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(512), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("created", sa.String(32), nullable=False),
        sa.Column("revoked", sa.String(32)),
    )


def downgrade() -> None:
    for table in ("tokens", "uploads", "files", "versions", "modules"):
        op.drop_table(table)

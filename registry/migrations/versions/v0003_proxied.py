"""``modules.proxied``: whether a module is a cached copy of an upstream's, not hosted here.

A proxied module's versions are committed by the caching proxy
(:mod:`registry.proxy`) and logged like hosted ones; its list and
``@latest`` are asked of the upstream. Existing modules are hosted.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a plain ADD COLUMN (with a default, SQLite allows NOT NULL): a batch copy of the
    # table would trip the foreign keys of versions on SQLite
    op.add_column(
        "modules", sa.Column("proxied", sa.Boolean, nullable=False, server_default=sa.false())
    )


def downgrade() -> None:
    with op.batch_alter_table("modules") as batch:
        batch.drop_column("proxied")

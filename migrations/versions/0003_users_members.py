"""Internal users, team memberships with roles, the user of each key, spend row and daily roll-up.

Revision ID: 0003_users_members
Revises: 0002_route_grants
Create Date: 2026-12-03

``daily_spend``'s primary key gains ``user_id`` (``''`` for the rows written before: no user), so a
roll-up row is per key, team, user, group and model.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003_users_members"
down_revision: str | None = "0002_route_grants"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Types as they were at this revision (not imported from gateway.db.models, which moves on).
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)
OLD_ROLLUP_KEY = ["date", "api_key", "team_id", "model_group", "model"]
NEW_ROLLUP_KEY = ["date", "api_key", "team_id", "user_id", "model_group", "model"]


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("user_alias", sa.String(255)),
        sa.Column("user_email", sa.String(320)),
        sa.Column("user_role", sa.String(32), nullable=False, server_default=sa.text("'internal_user'")),
        sa.Column("models", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("max_budget", sa.Double()),
        sa.Column("budget_duration", sa.String(32)),
        sa.Column("budget_reset_at", TS),
        sa.Column("spend", sa.Double(), nullable=False, server_default=sa.text("0")),
        sa.Column("rpm_limit", sa.BigInteger()),
        sa.Column("tpm_limit", sa.BigInteger()),
        sa.Column("max_parallel_requests", sa.Integer()),
        sa.Column("metadata", JSON, nullable=False, server_default=sa.text("'{}'")),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("user_id", name="pk_users"),
        sa.UniqueConstraint("user_email", name="uq_users_user_email"),
        sa.CheckConstraint(sa.text("user_role IN ('proxy_admin', 'proxy_admin_viewer', 'internal_user', "
                                   "'internal_user_viewer')"), name="ck_users_user_role"),
    )
    op.create_table(
        "team_memberships",
        sa.Column("team_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("role", sa.String(16), nullable=False, server_default=sa.text("'user'")),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("team_id", "user_id", name="pk_team_memberships"),
        sa.ForeignKeyConstraint(["team_id"], ["teams.team_id"], name="fk_team_memberships_team_id_teams",
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.user_id"], name="fk_team_memberships_user_id_users",
                                ondelete="CASCADE"),
        sa.CheckConstraint(sa.text("role IN ('admin', 'user')"), name="ck_team_memberships_role"),
    )
    op.create_index("ix_team_memberships_user_id", "team_memberships", ["user_id"])
    with op.batch_alter_table("verification_tokens") as batch:
        batch.add_column(sa.Column("user_id", sa.String(255)))
        batch.create_foreign_key("fk_verification_tokens_user_id_users", "users", ["user_id"], ["user_id"])
        batch.create_index("ix_verification_tokens_user_id", ["user_id"])
    with op.batch_alter_table("spend_logs") as batch:
        batch.add_column(sa.Column("user", sa.String(255)))
        batch.create_index("ix_spend_logs_user", ["user"])
    with op.batch_alter_table("daily_spend") as batch:
        batch.add_column(sa.Column("user_id", sa.String(255), nullable=False, server_default=sa.text("''")))
        batch.drop_constraint("pk_daily_spend", type_="primary")
        batch.create_primary_key("pk_daily_spend", NEW_ROLLUP_KEY)
        batch.create_index("ix_daily_spend_user_id_date", ["user_id", "date"])


def downgrade() -> None:
    # Rows of one (date, key, team, group, model) that differ only by user are merged back into one.
    sums = ("spend", "requests", "failed_requests", "prompt_tokens", "completion_tokens", "cached_tokens",
            "cache_hits", "cache_misses")
    keys = ", ".join(f'"{c}"' for c in OLD_ROLLUP_KEY)
    totals = ", ".join(f'sum("{c}") AS "{c}"' for c in sums)
    op.execute(f"CREATE TABLE daily_spend_merged AS SELECT {keys}, {totals} FROM daily_spend GROUP BY {keys}")
    op.execute("DELETE FROM daily_spend")
    with op.batch_alter_table("daily_spend") as batch:
        batch.drop_index("ix_daily_spend_user_id_date")
        batch.drop_constraint("pk_daily_spend", type_="primary")
        batch.drop_column("user_id")
        batch.create_primary_key("pk_daily_spend", OLD_ROLLUP_KEY)
    columns = ", ".join(f'"{c}"' for c in (*OLD_ROLLUP_KEY, *sums))
    op.execute(f"INSERT INTO daily_spend ({columns}) SELECT {columns} FROM daily_spend_merged")
    op.drop_table("daily_spend_merged")
    with op.batch_alter_table("spend_logs") as batch:
        batch.drop_index("ix_spend_logs_user")
        batch.drop_column("user")
    with op.batch_alter_table("verification_tokens") as batch:
        batch.drop_index("ix_verification_tokens_user_id")
        batch.drop_constraint("fk_verification_tokens_user_id_users", type_="foreignkey")
        batch.drop_column("user_id")
    op.drop_index("ix_team_memberships_user_id", table_name="team_memberships")
    op.drop_table("team_memberships")
    op.drop_table("users")

"""Keys, teams, spend logs and daily spend roll-ups.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Types as they were at this revision (not imported from gateway.db.models, which moves on).
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def _zero() -> sa.TextClause:
    return sa.text("0")


def _limits_and_budget() -> list[sa.Column[object]]:
    return [
        sa.Column("models", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("max_budget", sa.Double()),
        sa.Column("budget_duration", sa.String(32)),
        sa.Column("budget_reset_at", TS),
        sa.Column("spend", sa.Double(), nullable=False, server_default=_zero()),
        sa.Column("rpm_limit", sa.BigInteger()),
        sa.Column("tpm_limit", sa.BigInteger()),
        sa.Column("max_parallel_requests", sa.Integer()),
    ]


def _created_updated() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", TS, nullable=False, server_default=sa.func.now()),
    ]


def upgrade() -> None:
    op.create_table(
        "teams",
        sa.Column("team_id", sa.String(64), nullable=False),
        sa.Column("team_alias", sa.String(255)),
        *_limits_and_budget(),
        sa.Column("blocked", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("metadata", JSON, nullable=False, server_default=sa.text("'{}'")),
        *_created_updated(),
        sa.PrimaryKeyConstraint("team_id", name="pk_teams"),
    )
    op.create_table(
        "verification_tokens",
        sa.Column("token", sa.String(128), nullable=False),
        sa.Column("key_alias", sa.String(255)),
        sa.Column("key_prefix", sa.String(32)),
        sa.Column("team_id", sa.String(64)),
        *_limits_and_budget(),
        sa.Column("expires", TS),
        sa.Column("blocked", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("metadata", JSON, nullable=False, server_default=sa.text("'{}'")),
        sa.Column("tags", JSON, nullable=False, server_default=sa.text("'[]'")),
        *_created_updated(),
        sa.PrimaryKeyConstraint("token", name="pk_verification_tokens"),
        sa.UniqueConstraint("key_alias", name="uq_verification_tokens_key_alias"),
        sa.ForeignKeyConstraint(["team_id"], ["teams.team_id"], name="fk_verification_tokens_team_id_teams"),
    )
    op.create_index("ix_verification_tokens_team_id", "verification_tokens", ["team_id"])
    op.create_index("ix_verification_tokens_budget_reset_at_expires", "verification_tokens",
                    ["budget_reset_at", "expires"])
    op.create_table(
        "spend_logs",
        sa.Column("request_id", sa.String(255), nullable=False),
        sa.Column("api_key", sa.String(128), nullable=False, server_default=sa.text("''")),
        sa.Column("key_alias", sa.String(255)),
        sa.Column("team_id", sa.String(64)),
        sa.Column("model_group", sa.String(255)),
        sa.Column("model", sa.String(255)),
        sa.Column("model_id", sa.String(255)),
        sa.Column("custom_llm_provider", sa.String(64)),
        sa.Column("call_type", sa.String(64)),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False, server_default=_zero()),
        sa.Column("cached_tokens", sa.BigInteger(), nullable=False, server_default=_zero()),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False, server_default=_zero()),
        sa.Column("total_tokens", sa.BigInteger(), nullable=False, server_default=_zero()),
        sa.Column("spend", sa.Double(), nullable=False, server_default=_zero()),
        sa.Column("startTime", TS, nullable=False),
        sa.Column("endTime", TS, nullable=False),
        sa.Column("status", sa.Integer()),
        sa.Column("error_class", sa.String(128)),
        sa.Column("retries", sa.Integer(), nullable=False, server_default=_zero()),
        sa.Column("fallbacks", sa.Integer(), nullable=False, server_default=_zero()),
        sa.Column("cache_hits", sa.Integer(), nullable=False, server_default=_zero()),
        sa.Column("cache_misses", sa.Integer(), nullable=False, server_default=_zero()),
        sa.Column("cost_saved", sa.Double(), nullable=False, server_default=_zero()),
        sa.Column("content", sa.Text()),
        sa.Column("metadata", JSON, nullable=False, server_default=sa.text("'{}'")),
        sa.PrimaryKeyConstraint("request_id", name="pk_spend_logs"),
    )
    op.create_index("ix_spend_logs_startTime", "spend_logs", ["startTime"])
    op.create_index("ix_spend_logs_api_key_startTime", "spend_logs", ["api_key", "startTime"])
    op.create_index("ix_spend_logs_team_id", "spend_logs", ["team_id"])
    op.create_index("ix_spend_logs_model_group", "spend_logs", ["model_group"])
    op.create_table(
        "daily_spend",
        sa.Column("date", sa.Date(), nullable=False),
        sa.Column("api_key", sa.String(128), nullable=False),
        sa.Column("team_id", sa.String(64), nullable=False),
        sa.Column("model_group", sa.String(255), nullable=False),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("spend", sa.Double(), nullable=False, server_default=_zero()),
        *(sa.Column(name, sa.BigInteger(), nullable=False, server_default=_zero())
          for name in ("requests", "failed_requests", "prompt_tokens", "completion_tokens", "cached_tokens",
                       "cache_hits", "cache_misses")),
        sa.PrimaryKeyConstraint("date", "api_key", "team_id", "model_group", "model", name="pk_daily_spend"),
    )
    op.create_index("ix_daily_spend_team_id_date", "daily_spend", ["team_id", "date"])
    op.create_index("ix_daily_spend_api_key_date", "daily_spend", ["api_key", "date"])


def downgrade() -> None:
    op.drop_table("daily_spend")
    op.drop_table("spend_logs")
    op.drop_table("verification_tokens")
    op.drop_table("teams")

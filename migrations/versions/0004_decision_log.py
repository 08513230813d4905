"""The decision log (one row per answered question, its outcome on the same row), captured inputs, calibrators.

Revision ID: 0004_decision_log
Revises: 0003_users_members
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004_decision_log"
down_revision: str | None = "0003_users_members"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Types as they were at this revision (not imported from gateway.db.models, which moves on).
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "decisions",
        sa.Column("request_id", sa.String(255), nullable=False),
        sa.Column("question_index", sa.Integer(), nullable=False),
        sa.Column("question", sa.String(255), nullable=False),
        sa.Column("question_name", sa.String(255)),
        sa.Column("site", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("options", JSON, nullable=False),
        sa.Column("probabilities", JSON, nullable=False),
        sa.Column("top_index", sa.Integer(), nullable=False),
        sa.Column("confidence", sa.Double(), nullable=False),
        sa.Column("bin", sa.Integer(), nullable=False),
        sa.Column("sum_sq", sa.Double(), nullable=False),
        sa.Column("served", JSON),
        sa.Column("calibrator_id", sa.Integer()),
        sa.Column("cal_top_index", sa.Integer(), nullable=False),
        sa.Column("cal_confidence", sa.Double(), nullable=False),
        sa.Column("cal_bin", sa.Integer(), nullable=False),
        sa.Column("cal_sum_sq", sa.Double(), nullable=False),
        sa.Column("cached", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("model_group", sa.String(255)),
        sa.Column("model_id", sa.String(255)),
        sa.Column("model", sa.String(255)),
        sa.Column("model_version", sa.String(255)),
        sa.Column("api_key", sa.String(128), nullable=False, server_default=sa.text("''")),
        sa.Column("team_id", sa.String(64)),
        sa.Column("user", sa.String(255)),
        sa.Column("input_digest", sa.String(80)),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("outcome", JSON),
        sa.Column("outcome_index", sa.Integer()),
        sa.Column("outcome_weight", sa.Double()),
        sa.Column("observed_at", TS),
        sa.Column("outcome_at", TS),
        sa.Column("correct", sa.Double()),
        sa.Column("brier", sa.Double()),
        sa.Column("log_loss", sa.Double()),
        sa.Column("cal_correct", sa.Double()),
        sa.Column("cal_brier", sa.Double()),
        sa.Column("cal_log_loss", sa.Double()),
        sa.PrimaryKeyConstraint("request_id", "question_index", name="pk_decisions"),
    )
    op.create_index("ix_decisions_model_group_created_at", "decisions", ["model_group", "created_at"])
    op.create_index("ix_decisions_site_created_at", "decisions", ["site", "created_at"])
    op.create_table(
        "decision_inputs",
        sa.Column("request_id", sa.String(255), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("request_id", name="pk_decision_inputs"),
    )
    op.create_index("ix_decision_inputs_created_at", "decision_inputs", ["created_at"])
    op.create_table(
        "calibrators",
        sa.Column("id", sa.Integer(), nullable=False, autoincrement=True),
        sa.Column("model_group", sa.String(255), nullable=False),
        sa.Column("site", sa.String(32), nullable=False, server_default=sa.text("''")),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("params", JSON, nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("report", JSON, nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
        sa.Column("created_by", sa.String(255)),
        sa.PrimaryKeyConstraint("id", name="pk_calibrators"),
        sa.UniqueConstraint("model_group", "site", "version", name="uq_calibrators_model_group_site_version"),
    )
    op.create_index("ix_calibrators_model_group_site_active", "calibrators", ["model_group", "site", "active"])


def downgrade() -> None:
    op.drop_index("ix_calibrators_model_group_site_active", table_name="calibrators")
    op.drop_table("calibrators")
    op.drop_index("ix_decision_inputs_created_at", table_name="decision_inputs")
    op.drop_table("decision_inputs")
    for name in ("ix_decisions_site_created_at", "ix_decisions_model_group_created_at"):
        op.drop_index(name, table_name="decisions")
    op.drop_table("decisions")

"""The tables, with LiteLLM's column names where LiteLLM has the column.

- ``teams`` (``LiteLLM_TeamTable``): primary key ``team_id`` (uuid text).
- ``users`` (``LiteLLM_UserTable``): primary key ``user_id``; ``user_role`` one of LiteLLM's roles
  (``proxy_admin``, ``proxy_admin_viewer``, ``internal_user``, ``internal_user_viewer``).
- ``team_memberships`` (``LiteLLM_TeamMembership``, with the role LiteLLM keeps in the team's
  ``members_with_roles``): primary key (``team_id``, ``user_id``), ``role`` ``admin`` or ``user``.
- ``verification_tokens`` (``LiteLLM_VerificationToken``): primary key ``token``, the keyed hash of the
  key in hex (never the key itself); ``team_id`` references ``teams``, ``user_id`` references ``users``.
- ``spend_logs`` (``LiteLLM_SpendLogs``): primary key ``request_id``, so a replayed row is not written twice;
  ``user`` is the key's user (LiteLLM's column name).
- ``daily_spend`` (LiteLLM's ``LiteLLM_Daily*Spend``): primary key (``date``, ``api_key``, ``team_id``,
  ``user_id``, ``model_group``, ``model``).

Python attribute names are the column names, except ``metadata`` (a name SQLAlchemy's declarative base
keeps for itself): the attribute is ``metadata_``, the column ``metadata``. ``daily_spend`` keys use
``""`` where a spend row has no key, team, group or model (a primary key column cannot be NULL).

Times are timezone-aware UTC on both dialects (``UTCDateTime``); JSON columns are JSONB on PostgreSQL
and JSON text on SQLite. The schema itself is created by the Alembic chain in ``migrations/``, not by
``create_all``; a test checks that the chain and these models agree.
"""

from __future__ import annotations

import datetime as dt
import uuid
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from gateway.utc import utc

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(sa.TypeDecorator[datetime]):
    """A timestamp stored in UTC and read back timezone-aware on every dialect (SQLite keeps no offset)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return utc(value)


JSONType = sa.JSON().with_variant(JSONB(), "postgresql")
NullableJSON = sa.JSON(none_as_null=True).with_variant(JSONB(none_as_null=True), "postgresql")  # None is SQL NULL


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_team_id() -> str:
    return str(uuid.uuid4())


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class Team(Base):
    """``LiteLLM_TeamTable``: a team's models, budget and limits; its keys point at it."""

    __tablename__ = "teams"

    team_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True, default=new_team_id)
    team_alias: Mapped[str | None] = mapped_column(sa.String(255))
    models: Mapped[list[str]] = mapped_column(JSONType, default=list, server_default=sa.text("'[]'"))
    max_budget: Mapped[float | None] = mapped_column(sa.Double())
    budget_duration: Mapped[str | None] = mapped_column(sa.String(32))  # LiteLLM's units: 30s, 5m, 2h, 1d, 1w, 1mo
    budget_reset_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    spend: Mapped[float] = mapped_column(sa.Double(), default=0.0, server_default=sa.text("0"))
    rpm_limit: Mapped[int | None] = mapped_column(sa.BigInteger())
    tpm_limit: Mapped[int | None] = mapped_column(sa.BigInteger())
    max_parallel_requests: Mapped[int | None] = mapped_column(sa.Integer())
    blocked: Mapped[bool] = mapped_column(sa.Boolean(), default=False, server_default=sa.false())
    metadata_: Mapped[dict[str, Any]] = mapped_column(
        "metadata", JSONType, default=dict, server_default=sa.text("'{}'"))
    allowed_routes: Mapped[list[str]] = mapped_column(JSONType, default=list, server_default=sa.text("'[]'"))
    allowed_passthrough_routes: Mapped[list[str]] = mapped_column(JSONType, default=list,
                                                                  server_default=sa.text("'[]'"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, server_default=sa.func.now())
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, server_default=sa.func.now())


def new_user_id() -> str:
    return str(uuid.uuid4())


class User(Base):
    """``LiteLLM_UserTable``: an internal user, with a role, models, a budget and limits like a key's;
    the user's keys point at it."""

    __tablename__ = "users"
    __table_args__ = (sa.CheckConstraint(sa.text("user_role IN ('proxy_admin', 'proxy_admin_viewer', "
                                                 "'internal_user', 'internal_user_viewer')"), name="user_role"),)

    user_id: Mapped[str] = mapped_column(sa.String(255), primary_key=True, default=new_user_id)
    user_alias: Mapped[str | None] = mapped_column(sa.String(255))
    user_email: Mapped[str | None] = mapped_column(sa.String(320), unique=True)
    user_role: Mapped[str] = mapped_column(sa.String(32), default="internal_user",
                                           server_default=sa.text("'internal_user'"))
    models: Mapped[list[str]] = mapped_column(JSONType, default=list, server_default=sa.text("'[]'"))
    max_budget: Mapped[float | None] = mapped_column(sa.Double())
    budget_duration: Mapped[str | None] = mapped_column(sa.String(32))
    budget_reset_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    spend: Mapped[float] = mapped_column(sa.Double(), default=0.0, server_default=sa.text("0"))
    rpm_limit: Mapped[int | None] = mapped_column(sa.BigInteger())
    tpm_limit: Mapped[int | None] = mapped_column(sa.BigInteger())
    max_parallel_requests: Mapped[int | None] = mapped_column(sa.Integer())
    metadata_: Mapped[dict[str, Any]] = mapped_column(
        "metadata", JSONType, default=dict, server_default=sa.text("'{}'"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, server_default=sa.func.now())
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, server_default=sa.func.now())


class TeamMembership(Base):
    """A user's membership of a team and role in it (LiteLLM's ``members_with_roles``): a team ``admin``
    manages the team's keys and reads its spend; a ``user`` is a member only."""

    __tablename__ = "team_memberships"
    __table_args__ = (sa.Index("ix_team_memberships_user_id", "user_id"),
                      sa.CheckConstraint(sa.text("role IN ('admin', 'user')"), name="role"))

    team_id: Mapped[str] = mapped_column(sa.String(64), sa.ForeignKey("teams.team_id", ondelete="CASCADE"),
                                         primary_key=True)
    user_id: Mapped[str] = mapped_column(sa.String(255), sa.ForeignKey("users.user_id", ondelete="CASCADE"),
                                         primary_key=True)
    role: Mapped[str] = mapped_column(sa.String(16), default="user", server_default=sa.text("'user'"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, server_default=sa.func.now())


class VerificationToken(Base):
    """``LiteLLM_VerificationToken``: one virtual key, stored as its keyed hash (``token``), never in clear."""

    __tablename__ = "verification_tokens"
    __table_args__ = (
        sa.Index("ix_verification_tokens_team_id", "team_id"),
        sa.Index("ix_verification_tokens_user_id", "user_id"),
        sa.Index("ix_verification_tokens_budget_reset_at_expires", "budget_reset_at", "expires"),
    )

    token: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    key_alias: Mapped[str | None] = mapped_column(sa.String(255), unique=True)
    key_prefix: Mapped[str | None] = mapped_column(sa.String(32))  # the first characters, shown in lists: "sk-abc…"
    team_id: Mapped[str | None] = mapped_column(sa.String(64), sa.ForeignKey("teams.team_id"))
    user_id: Mapped[str | None] = mapped_column(sa.String(255), sa.ForeignKey("users.user_id"))
    models: Mapped[list[str]] = mapped_column(JSONType, default=list, server_default=sa.text("'[]'"))
    max_budget: Mapped[float | None] = mapped_column(sa.Double())
    budget_duration: Mapped[str | None] = mapped_column(sa.String(32))
    budget_reset_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    spend: Mapped[float] = mapped_column(sa.Double(), default=0.0, server_default=sa.text("0"))
    rpm_limit: Mapped[int | None] = mapped_column(sa.BigInteger())
    tpm_limit: Mapped[int | None] = mapped_column(sa.BigInteger())
    max_parallel_requests: Mapped[int | None] = mapped_column(sa.Integer())
    expires: Mapped[datetime | None] = mapped_column(UTCDateTime())
    blocked: Mapped[bool] = mapped_column(sa.Boolean(), default=False, server_default=sa.false())
    metadata_: Mapped[dict[str, Any]] = mapped_column(
        "metadata", JSONType, default=dict, server_default=sa.text("'{}'"))
    tags: Mapped[list[str]] = mapped_column(JSONType, default=list, server_default=sa.text("'[]'"))
    allowed_routes: Mapped[list[str]] = mapped_column(JSONType, default=list, server_default=sa.text("'[]'"))
    allowed_passthrough_routes: Mapped[list[str]] = mapped_column(JSONType, default=list,
                                                                  server_default=sa.text("'[]'"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, server_default=sa.func.now())
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, server_default=sa.func.now())


class SpendLog(Base):
    """``LiteLLM_SpendLogs``: one row per request that reached the settle step, written through the outbox.

    ``api_key`` is the key's hash (``verification_tokens.token``), ``""`` for a request without a key;
    ``team_id`` has no foreign key, so rows outlive a deleted team. ``content`` is NULL unless
    ``store_content`` asks for a digest or the full request.
    """

    __tablename__ = "spend_logs"
    __table_args__ = (
        sa.Index("ix_spend_logs_startTime", "startTime"),
        sa.Index("ix_spend_logs_api_key_startTime", "api_key", "startTime"),
        sa.Index("ix_spend_logs_team_id", "team_id"),
        sa.Index("ix_spend_logs_user", "user"),
        sa.Index("ix_spend_logs_model_group", "model_group"),
    )

    request_id: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    api_key: Mapped[str] = mapped_column(sa.String(128), default="", server_default=sa.text("''"))
    key_alias: Mapped[str | None] = mapped_column(sa.String(255))
    team_id: Mapped[str | None] = mapped_column(sa.String(64))
    user: Mapped[str | None] = mapped_column(sa.String(255))  # the key's user_id (LiteLLM's column name)
    model_group: Mapped[str | None] = mapped_column(sa.String(255))
    model: Mapped[str | None] = mapped_column(sa.String(255))  # the deployment's provider/model
    model_id: Mapped[str | None] = mapped_column(sa.String(255))
    custom_llm_provider: Mapped[str | None] = mapped_column(sa.String(64))
    call_type: Mapped[str | None] = mapped_column(sa.String(64))  # the route
    prompt_tokens: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    cached_tokens: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    completion_tokens: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    total_tokens: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    spend: Mapped[float] = mapped_column(sa.Double(), default=0.0, server_default=sa.text("0"))
    startTime: Mapped[datetime] = mapped_column(UTCDateTime())  # LiteLLM's column name, kept
    endTime: Mapped[datetime] = mapped_column(UTCDateTime())
    status: Mapped[int | None] = mapped_column(sa.Integer())  # the HTTP status sent to the caller
    error_class: Mapped[str | None] = mapped_column(sa.String(128))
    retries: Mapped[int] = mapped_column(sa.Integer(), default=0, server_default=sa.text("0"))
    fallbacks: Mapped[int] = mapped_column(sa.Integer(), default=0, server_default=sa.text("0"))
    cache_hits: Mapped[int] = mapped_column(sa.Integer(), default=0, server_default=sa.text("0"))
    cache_misses: Mapped[int] = mapped_column(sa.Integer(), default=0, server_default=sa.text("0"))
    cost_saved: Mapped[float] = mapped_column(sa.Double(), default=0.0, server_default=sa.text("0"))
    content: Mapped[str | None] = mapped_column(sa.Text())
    metadata_: Mapped[dict[str, Any]] = mapped_column(
        "metadata", JSONType, default=dict, server_default=sa.text("'{}'"))


class DailySpend(Base):
    """Daily roll-up of ``spend_logs`` (by the UTC date of ``startTime``), added to in the transaction that
    inserts the spend rows, and only for rows actually inserted: a replayed row never counts twice."""

    __tablename__ = "daily_spend"
    __table_args__ = (
        sa.Index("ix_daily_spend_team_id_date", "team_id", "date"),
        sa.Index("ix_daily_spend_api_key_date", "api_key", "date"),
        sa.Index("ix_daily_spend_user_id_date", "user_id", "date"),
    )

    date: Mapped[dt.date] = mapped_column(sa.Date(), primary_key=True)
    api_key: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    team_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(sa.String(255), primary_key=True, server_default=sa.text("''"))
    model_group: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    model: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    spend: Mapped[float] = mapped_column(sa.Double(), default=0.0, server_default=sa.text("0"))
    requests: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    failed_requests: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    prompt_tokens: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    completion_tokens: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    cached_tokens: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    cache_hits: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))
    cache_misses: Mapped[int] = mapped_column(sa.BigInteger(), default=0, server_default=sa.text("0"))


class DecisionRecord(Base):
    """The decision log: one row per answered question of a request (``request_id``, ``question_index``),
    written through the spend outbox with its request's spend row; its outcome, when posted, on the same
    row (``POST /v1/outcomes``), so a calibration report is one table's aggregate.

    ``probabilities`` are the raw ones (as the upstream, or the cache, answered); ``served`` the
    calibrated ones the caller got, NULL when no calibrator applied. The ``cal_*`` columns always hold
    the served figures (the raw ones again when nothing applied), so the reports add them up without a
    branch. ``bin`` is the 15-bin reliability bin of the top-1 probability; ``sum_sq`` the sum of the
    squared probabilities (Brier = sum_sq - 2 p_outcome + 1). The outcome's measures (``correct``,
    ``brier``, ``log_loss`` and their ``cal_`` twins) are computed when the outcome is stored.
    """

    __tablename__ = "decisions"
    __table_args__ = (
        # two indexes only: each costs every logged decision an insert into it (on the drain, in the gateway's
        # process); a report by team or by time alone scans, as one over everything does anyway
        sa.Index("ix_decisions_model_group_created_at", "model_group", "created_at"),
        sa.Index("ix_decisions_site_created_at", "site", "created_at"),
    )

    request_id: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    question_index: Mapped[int] = mapped_column(sa.Integer(), primary_key=True)
    question: Mapped[str] = mapped_column(sa.String(255))  # the question's id (System One key, OpenAI name or index)
    question_name: Mapped[str | None] = mapped_column(sa.String(255))
    site: Mapped[str] = mapped_column(sa.String(32))
    kind: Mapped[str] = mapped_column(sa.String(16))
    options: Mapped[list[Any]] = mapped_column(JSONType)  # the option values, [true, false], or the level indices
    probabilities: Mapped[list[float]] = mapped_column(JSONType)
    top_index: Mapped[int] = mapped_column(sa.Integer())
    confidence: Mapped[float] = mapped_column(sa.Double())
    bin: Mapped[int] = mapped_column(sa.Integer())
    sum_sq: Mapped[float] = mapped_column(sa.Double())
    served: Mapped[list[float] | None] = mapped_column(NullableJSON)
    calibrator_id: Mapped[int | None] = mapped_column(sa.Integer())
    cal_top_index: Mapped[int] = mapped_column(sa.Integer())
    cal_confidence: Mapped[float] = mapped_column(sa.Double())
    cal_bin: Mapped[int] = mapped_column(sa.Integer())
    cal_sum_sq: Mapped[float] = mapped_column(sa.Double())
    cached: Mapped[bool] = mapped_column(sa.Boolean(), default=False, server_default=sa.false())
    model_group: Mapped[str | None] = mapped_column(sa.String(255))
    model_id: Mapped[str | None] = mapped_column(sa.String(255))  # the deployment's id
    model: Mapped[str | None] = mapped_column(sa.String(255))  # the deployment's provider/model
    model_version: Mapped[str | None] = mapped_column(sa.String(255))  # the model the upstream said answered
    api_key: Mapped[str] = mapped_column(sa.String(128), default="", server_default=sa.text("''"))
    team_id: Mapped[str | None] = mapped_column(sa.String(64))
    user: Mapped[str | None] = mapped_column(sa.String(255))
    input_digest: Mapped[str | None] = mapped_column(sa.String(80))  # sha256:<hex> of the input; NULL: capture none
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    outcome: Mapped[Any | None] = mapped_column(NullableJSON, nullable=True)  # as posted: option, true/false, level
    outcome_index: Mapped[int | None] = mapped_column(sa.Integer())
    outcome_weight: Mapped[float | None] = mapped_column(sa.Double())
    observed_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    outcome_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    correct: Mapped[float | None] = mapped_column(sa.Double())
    brier: Mapped[float | None] = mapped_column(sa.Double())
    log_loss: Mapped[float | None] = mapped_column(sa.Double())
    cal_correct: Mapped[float | None] = mapped_column(sa.Double())
    cal_brier: Mapped[float | None] = mapped_column(sa.Double())
    cal_log_loss: Mapped[float | None] = mapped_column(sa.Double())


class DecisionInput(Base):
    """A request's input, kept where the decision log's capture is ``full``, until ``full_retention`` runs
    out (``decisions-gateway decision-log purge``)."""

    __tablename__ = "decision_inputs"
    __table_args__ = (sa.Index("ix_decision_inputs_created_at", "created_at"),)

    request_id: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    content: Mapped[str] = mapped_column(sa.Text())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class CalibratorRecord(Base):
    """A fitted calibrator, versioned per (``model_group``, ``site``; ``""`` for the whole group): one
    version at a time is ``active``; a rollback activates the one before."""

    __tablename__ = "calibrators"
    __table_args__ = (sa.UniqueConstraint("model_group", "site", "version"),
                      sa.Index("ix_calibrators_model_group_site_active", "model_group", "site", "active"))

    id: Mapped[int] = mapped_column(sa.Integer(), primary_key=True, autoincrement=True)
    model_group: Mapped[str] = mapped_column(sa.String(255))
    site: Mapped[str] = mapped_column(sa.String(32), default="", server_default=sa.text("''"))
    version: Mapped[int] = mapped_column(sa.Integer())
    kind: Mapped[str] = mapped_column(sa.String(16))
    method: Mapped[str] = mapped_column(sa.String(16))
    params: Mapped[dict[str, Any]] = mapped_column(JSONType)
    n: Mapped[int] = mapped_column(sa.Integer())
    report: Mapped[dict[str, Any]] = mapped_column(JSONType)  # the held-out measures before and after
    active: Mapped[bool] = mapped_column(sa.Boolean(), default=False, server_default=sa.false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, server_default=sa.func.now())
    created_by: Mapped[str | None] = mapped_column(sa.String(255))


teams = Team.__table__
users = User.__table__
team_memberships = TeamMembership.__table__
verification_tokens = VerificationToken.__table__
spend_logs = SpendLog.__table__
daily_spend = DailySpend.__table__
decisions: sa.Table = DecisionRecord.__table__  # type: ignore[assignment]  # a Table, typed as a FromClause
decision_inputs: sa.Table = DecisionInput.__table__  # type: ignore[assignment]
calibrators: sa.Table = CalibratorRecord.__table__  # type: ignore[assignment]

# The spend_logs columns a row dict may carry (the outbox's rows); anything else is refused at append.
# Plain str, not SQLAlchemy's quoted_name: orjson takes only str keys.
SPEND_LOG_COLUMNS: frozenset[str] = frozenset(str(c.name) for c in SpendLog.__table__.columns)

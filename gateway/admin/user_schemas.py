"""The admin API's users and team members (LiteLLM's ``/user/*`` and ``/team/member_*`` shapes): requests
and responses, strict as ``schemas.py``'s, built on its field types."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator

from gateway.admin.schemas import (
    MAX_BATCH,
    NO_MEMBER_LIMITS,
    Alias,
    BudgetFields,
    Cost,
    DurationText,
    Email,
    KeyInfo,
    Money,
    Readable,
    Strict,
    TeamId,
    TeamInfo,
    TeamRole,
    UnsupportedNewUserFields,
    UnsupportedUpdateUserFields,
    UserId,
    UserRole,
    _refuse_unsupported,
)


class UserFields(BudgetFields):
    """A user's models and budget bound all its keys together."""

    user_alias: Alias | None = None
    user_email: Email | None = None
    user_role: UserRole | None = Field(None, description="LiteLLM's proxy role (a new user: internal_user)")


class NewUserTeam(Strict):
    """A team the new user joins, and its role there (LiteLLM's ``NewUserRequestTeam``)."""

    team_id: TeamId
    user_role: TeamRole = "user"
    max_budget_in_team: Any = Field(None, description=f"Not supported here: {NO_MEMBER_LIMITS}")

    _refused = field_validator("max_budget_in_team", mode="before")(_refuse_unsupported)


class NewUserRequest(UserFields, UnsupportedNewUserFields):  # type: ignore[misc,valid-type]
    user_id: UserId | None = Field(None, description="Chosen id; a UUID when left out")
    teams: Annotated[list[TeamId | NewUserTeam], Field(max_length=MAX_BATCH)] | None = Field(
        None, description="Teams it joins: ids (as a member) or {team_id, user_role: admin|user}")
    team_id: TeamId | None = Field(None, description="A team it joins as a member, and its key's team")
    auto_create_key: bool = Field(True, description="Also make a key for the user (shown once, as key)")
    key_alias: Alias | None = Field(None, description="The new key's alias")
    duration: DurationText | None = Field(None, description="The new key's lifetime")


class UpdateUserRequest(UserFields, UnsupportedUpdateUserFields):  # type: ignore[misc,valid-type]
    user_id: UserId | None = Field(None, description="The user (or give user_email alone to name it)")
    spend: Money | None = Field(None, description="Set the user's spend of the current budget period")


class DeleteUsersRequest(Strict):
    user_ids: Annotated[list[UserId], Field(min_length=1, max_length=MAX_BATCH)]


def _refuse_member_limit(value: Any) -> Any:
    if value in (None, {}, [], False):
        return None
    raise ValueError(f"is not supported here ({NO_MEMBER_LIMITS}); leave it out")


class Member(Strict):
    user_id: UserId | None = None
    user_email: Email | None = None
    role: TeamRole = Field(description="admin: manages the team's keys; user: a member")


class TeamMemberAddRequest(Strict):
    team_id: TeamId
    member: Member | Annotated[list[Member], Field(min_length=1, max_length=MAX_BATCH)]
    max_budget_in_team: Any = Field(None, description=f"Not supported here: {NO_MEMBER_LIMITS}")
    budget_duration: Any = Field(None, description=f"Not supported here: {NO_MEMBER_LIMITS}")
    allowed_models: Any = Field(None, description=f"Not supported here: {NO_MEMBER_LIMITS}")

    _refused = field_validator("max_budget_in_team", "budget_duration", "allowed_models",
                               mode="before")(_refuse_member_limit)


class TeamMemberDeleteRequest(Strict):
    team_id: TeamId
    user_id: UserId | None = None
    user_email: Email | None = None


class TeamMemberUpdateRequest(TeamMemberDeleteRequest):
    role: TeamRole | None = None
    max_budget_in_team: Any = None
    tpm_limit: Any = None
    rpm_limit: Any = None
    budget_duration: Any = None
    allowed_models: Any = None
    temp_budget_increase: Any = None
    temp_budget_expiry: Any = None
    model_max_budget: Any = None

    _refused = field_validator("max_budget_in_team", "tpm_limit", "rpm_limit", "budget_duration", "allowed_models",
                               "temp_budget_increase", "temp_budget_expiry", "model_max_budget",
                               mode="before")(_refuse_member_limit)


class UserInfo(Readable):
    """LiteLLM's ``LiteLLM_UserTable`` as this gateway keeps it; ``teams`` the ids of its teams."""

    user_id: str
    user_alias: str | None
    user_email: str | None
    user_role: str
    models: list[str]
    max_budget: float | None
    budget_duration: str | None
    budget_reset_at: datetime | None
    spend: Cost
    tpm_limit: int | None
    rpm_limit: int | None
    max_parallel_requests: int | None
    metadata: dict[str, Any]
    teams: list[str]
    team_roles: dict[str, str] = Field(default_factory=dict, description="team id -> admin | user")
    created_at: datetime | None
    updated_at: datetime | None


class UserListItem(UserInfo):
    key_count: int


class UserListResponse(BaseModel):
    users: list[UserListItem]
    total: int
    page: int
    page_size: int
    total_pages: int


class CallerInfo(BaseModel):
    """Who is asking (``/user/info`` without ``user_id``): what the UI shows follows from it."""

    role: str | None = Field(description="proxy_admin (the master key too), proxy_admin_viewer, internal_user, "
                             "internal_user_viewer, or null for a key of no user")
    admin_teams: list[str]
    team_id: str | None = Field(description="The calling key's team")
    user_id: str | None
    key: str | None = Field(None, description="The calling key's id (token); null for the master key")


class UserInfoResponse(BaseModel):
    user_id: str | None
    user_info: UserInfo | None
    keys: list[KeyInfo]
    teams: list[TeamInfo]
    caller: CallerInfo | None = None


class NewUserResponse(UserInfo):
    """LiteLLM's ``NewUserResponse``: the user and, with ``auto_create_key``, its key (shown once)."""

    key: str | None = Field(None, description="The new key itself: shown this once")
    token: str | None = Field(None, description="The new key's id")
    key_name: str | None = None
    key_alias: str | None = None
    expires: datetime | None = None
    team_id: str | None = Field(None, description="The new key's team")


class DeleteUsersResponse(BaseModel):
    deleted_users: list[str]
    deleted_keys: int


class TeamMembership(BaseModel):
    team_id: str
    user_id: str
    role: str


class TeamAddMemberResponse(TeamInfo):
    updated_users: list[UserInfo]
    updated_team_memberships: list[TeamMembership]


class TeamMemberUpdateResponse(BaseModel):
    team_id: str
    user_id: str
    user_email: str | None
    role: str

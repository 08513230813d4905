"""The admin API's request and response bodies (pydantic), with LiteLLM's field names.

Every field is bounded: strings by length and alphabet, lists by count, numbers non-negative and
finite, ``metadata`` by its JSON size. Unknown fields are refused by name ("is not a recognised
field"), and a LiteLLM key field this gateway does not act on (``user_id``, ``aliases``, ...:
``UNSUPPORTED_KEY_FIELDS``) is refused naming it as not supported here, so none is silently accepted.
A key appears in a response only as ``key`` of ``GenerateKeyResponse`` (creation and regeneration).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    ValidationInfo,
    create_model,
    field_validator,
)

from gateway.admin.body import readable
from gateway.auth.durations import parse_duration
from gateway.spend.cost import shown_cost

MAX_MODELS = 100
MAX_TAGS = 64
MAX_METADATA_BYTES = 16 * 1024
MAX_BATCH = 100  # keys or teams per delete
MAX_PAGE_SIZE = 100
MAX_MONEY = 1e12
MAX_LIMIT = 10**12


def _check_duration(value: str) -> str:
    parse_duration(value)  # DurationError is a ValueError: pydantic reports it on the field
    return value


def _check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except ValueError:  # NaN or infinity; a lone surrogate (UnicodeEncodeError): stored, it could not be shown
        raise ValueError("must hold only finite numbers and valid Unicode text") from None
    if len(text) > MAX_METADATA_BYTES:
        raise ValueError(f"must be at most {MAX_METADATA_BYTES} bytes of JSON")
    return value


def _trimmed(value: str) -> str:
    if value != value.strip():
        raise ValueError("must not start or end with whitespace")
    return value


# Printable text without control characters; aliases and model names may hold spaces and slashes.
Text = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^[^\x00-\x1f\x7f]+$")]
ModelName = Text
Alias = Annotated[Text, AfterValidator(_trimmed)]  # unique among keys ignoring case (gateway/admin/service.py)
Tag = Annotated[str, StringConstraints(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f]+$")]
TeamId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$")]
# A user's id (LiteLLM's are free text, often an email): printable ASCII without spaces.
UserId = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^[\x21-\x7e]+$")]
_EMAIL = r"^[^\s@\x00-\x1f\x7f]+@[^\s@\x00-\x1f\x7f]+$"
Email = Annotated[str, StringConstraints(min_length=3, max_length=320, pattern=_EMAIL)]
UserRole = Literal["proxy_admin", "proxy_admin_viewer", "internal_user", "internal_user_viewer"]
TeamRole = Literal["admin", "user"]
# A key or its id (the 64-hex-digit hash): printable ASCII, no spaces.
KeyRef = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[\x21-\x7e]+$")]
DurationText = Annotated[str, StringConstraints(max_length=16), AfterValidator(_check_duration)]
Money = Annotated[float, Field(ge=0, le=MAX_MONEY, allow_inf_nan=False)]
# A spend in an answer: 12 significant digits, without the float noise of its sums (gateway/spend/cost.py).
Cost = Annotated[float, PlainSerializer(shown_cost, return_type=float)]
Limit = Annotated[int, Field(ge=0, le=MAX_LIMIT)]
Metadata = Annotated[dict[str, Any], AfterValidator(_check_metadata)]
Models = Annotated[list[ModelName], Field(max_length=MAX_MODELS)]
# A route path (``/typesafe/v1/systemone``, ``/typesafe``, ``/typesafe/v1/*``): gateway/auth/routes.py matches it.
RoutePath = Annotated[str, StringConstraints(min_length=1, max_length=255, pattern=r"^/[\x21-\x7e]*$")]
Routes = Annotated[list[RoutePath], Field(max_length=MAX_MODELS)]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS)]


class Strict(BaseModel):
    # strict: a number must be a JSON number ("10" and true are not), a flag true or false
    model_config = ConfigDict(extra="forbid", strict=True)


class BudgetFields(Strict):
    """What keys, teams and users share: models, budget, limits, metadata."""

    models: Models | None = Field(None, description="Model groups it may call; empty: all (within the team's)")
    max_budget: Money | None = Field(None, description="USD per budget period; no limit when null")
    budget_duration: DurationText | None = Field(None, description="Budget period: 30s, 1h, 1d, 7d, 30d, 1mo")
    tpm_limit: Limit | None = None
    rpm_limit: Limit | None = None
    max_parallel_requests: Limit | None = None
    metadata: Metadata | None = None


class LimitFields(BudgetFields):
    """What keys and teams share besides: blocked, the routes they may call."""

    blocked: bool | None = None
    allowed_routes: Routes | None = Field(None, description="Routes it may call; empty: every decision route")
    allowed_passthrough_routes: Routes | None = Field(
        None, description="Pass-through routes it may call (/typesafe, /laya, /bespoke); empty: none "
                          "(a key without its own takes its team's)")


# LiteLLM's GenerateKeyRequest / UpdateKeyRequest fields this gateway does not act on, and why. Each is
# accepted only at LiteLLM's default (null, {}, [], false; key_type "default"), which a client may send
# for a field it leaves alone; any other value is a 400 naming the field as not supported here.
UNSUPPORTED_KEY_FIELDS: dict[str, str] = {
    "agent_id": "this gateway has no agents",
    "organization_id": "this gateway has no organizations", "project_id": "this gateway has no projects",
    "soft_budget": "no soft-budget alerts are sent here; use max_budget",
    "model_max_budget": "budgets are per key and per team here, not per model",
    "budget_limits": "a key has one budget window here: max_budget with budget_duration",
    "budget_fallbacks": "a key has one budget here", "budget_id": "budgets are set on the key here",
    "end_user_budget_id": "this gateway has no end users",
    "temp_budget_increase": "raise max_budget instead", "temp_budget_expiry": "raise max_budget instead",
    "aliases": "model aliases are the config's router_settings.model_group_alias here",
    "config": "a key carries no config here", "permissions": "a key's access is models and allowed_routes here",
    "object_permission": "a key's access is models and allowed_routes here",
    "allowed_cache_controls": "the cache is set per model group and per team here",
    "model_rpm_limit": "rpm_limit is per key here, not per model",
    "model_tpm_limit": "tpm_limit is per key here, not per model", "mcp_rpm_limit": "this gateway has no MCP",
    "tag_rpm_limit": "rpm_limit is per key here, not per tag", "tpd_limit": "use tpm_limit or max_budget",
    "rpm_limit_type": "rpm_limit is a plain limit here", "tpm_limit_type": "tpm_limit is a plain limit here",
    "guardrails": "this gateway has no guardrails", "policies": "this gateway has no guardrail policies",
    "disable_global_guardrails": "this gateway has no guardrails", "prompts": "this gateway has no prompts",
    "default_estimated_output_tokens": "decision answers are priced from their own usage",
    "default_estimated_output_tokens_per_model": "decision answers are priced from their own usage",
    "enable_prompt_caching": "the cache is set per model group and per team here",
    "throttle_on_budget_exceeded": "a key over its budget is refused here",
    "enforced_params": "this gateway enforces no request parameters",
    "denied_passthrough_routes": "grant pass-through routes with allowed_passthrough_routes",
    "allowed_vector_store_indexes": "this gateway has no vector stores",
    "router_settings": "routing is the config's router_settings here",
    "access_group_ids": "this gateway has no access groups", "send_invite_email": "this gateway sends no email",
    "key_type": "a key's routes are allowed_routes here", "auto_rotate": "rotate with /key/regenerate",
    "rotation_interval": "rotate with /key/regenerate",
}
LITELLM_DEFAULTS: dict[str, Any] = {"key_type": "default"}
CHOSEN_KEY = "the gateway makes every key, so that none is guessable or reused"


# LiteLLM's NewUserRequest / UpdateUserRequest and team member fields this gateway does not act on
# (besides the key fields above that those requests carry too), refused alike.
USER_KEY_FIELDS = "change the user's keys with /key/update"
NO_MEMBER_LIMITS = "a team member has no budget or limits of its own here; set them on the user or its keys"
UNSUPPORTED_USER_FIELDS: dict[str, str] = {
    "send_invite_email": "this gateway sends no email", "sso_user_id": "this gateway has no single sign-on",
    "organizations": "this gateway has no organizations", "password": "users sign in with keys here",
    "model_max_budget": "budgets are per user, key and team here, not per model",
    "blocked": "block the user's keys with /key/block", "max_budget_in_team": NO_MEMBER_LIMITS,
    "allowed_models": NO_MEMBER_LIMITS, "temp_budget_increase": "raise max_budget instead",
    "temp_budget_expiry": "raise max_budget instead",
}
UPDATE_USER_FIELDS: dict[str, str] = {"key_alias": USER_KEY_FIELDS, "duration": USER_KEY_FIELDS,
                                      "team_id": "add the user to a team with /team/member_add"}
_WHY = {**UNSUPPORTED_KEY_FIELDS, **UNSUPPORTED_USER_FIELDS, **UPDATE_USER_FIELDS,
        "spend": "a new user starts with no spend; set it with /user/update"}


def _refuse_unsupported(value: Any, info: ValidationInfo) -> Any:
    name = info.field_name or ""
    if value in (None, {}, [], False) or value == LITELLM_DEFAULTS.get(name):
        return None
    why = CHOSEN_KEY if name == "key" else _WHY[name]
    raise ValueError(f"is not supported here ({why}); leave it out")


def _refusing(model_name: str, names: list[str]) -> type[Strict]:
    """A base model whose fields ``names`` accept only LiteLLM's defaults, refusing anything else by name."""
    return create_model(  # type: ignore[call-overload]
        model_name, __base__=Strict,
        __validators__={"refused": field_validator(*names, mode="before")(_refuse_unsupported)},
        **{name: (Any, Field(None, description=f"Not supported here: {_WHY[name]}")) for name in names})


UnsupportedKeyFields: type[Strict] = _refusing("UnsupportedKeyFields", list(UNSUPPORTED_KEY_FIELDS))
_USER_REFUSED = [name for name in UNSUPPORTED_KEY_FIELDS if name not in ("model_max_budget", "send_invite_email")]
_USER_ONLY = ["send_invite_email", "sso_user_id", "organizations", "password", "model_max_budget", "blocked"]
UnsupportedNewUserFields: type[Strict] = _refusing(
    "UnsupportedNewUserFields", [n for n in _USER_REFUSED if n != "model_max_budget"] + _USER_ONLY + ["spend"])
UnsupportedUpdateUserFields: type[Strict] = _refusing(
    "UnsupportedUpdateUserFields", [n for n in _USER_REFUSED if n != "model_max_budget"]
    + [n for n in _USER_ONLY if n not in ("send_invite_email", "sso_user_id", "organizations")]
    + list(UPDATE_USER_FIELDS))


class KeyFields(LimitFields, UnsupportedKeyFields):  # type: ignore[misc,valid-type]
    key_alias: Alias | None = None
    team_id: TeamId | None = None
    user_id: UserId | None = Field(None, description="The key's internal user (it must exist); the key acts "
                                   "with the user's role, models and limits")
    tags: Tags | None = None


class GenerateKeyRequest(KeyFields):
    duration: DurationText | None = Field(None, description="Lifetime (e.g. 30d); never expires when null")
    spend: Money | None = Field(None, description="Spend it starts with in its first budget period (default 0)")
    key: Any = Field(None, description=f"Not supported here: {CHOSEN_KEY}")

    _refused_key = field_validator("key", mode="before")(_refuse_unsupported)


class UpdateKeyRequest(KeyFields):
    key: KeyRef = Field(description="The key, or its id (token)")
    duration: DurationText | None = Field(None, description="New lifetime from now; null: never expires")
    spend: Money | None = Field(None, description="Set the spend of the current budget period (0 resets it)")


class RegenerateKeyRequest(KeyFields):
    key: KeyRef = Field(description="The key, or its id (token); it stops working")
    duration: DurationText | None = None


class KeyRequest(Strict):
    key: KeyRef = Field(description="The key, or its id (token)")


class DeleteKeysRequest(Strict):
    keys: Annotated[list[KeyRef], Field(max_length=MAX_BATCH)] | None = None
    key_aliases: Annotated[list[Alias], Field(max_length=MAX_BATCH)] | None = None


class TeamFields(LimitFields):
    team_alias: Alias | None = None


class NewTeamRequest(TeamFields):
    team_id: TeamId | None = Field(None, description="Chosen id; a UUID when left out")


class UpdateTeamRequest(TeamFields):
    team_id: TeamId


class TeamRequest(Strict):
    team_id: TeamId


class DeleteTeamsRequest(Strict):
    team_ids: Annotated[list[TeamId], Field(min_length=1, max_length=MAX_BATCH)]


# ---- responses ----------------------------------------------------------------------------------


class Readable(BaseModel):
    @field_validator("*", mode="before")
    @classmethod
    def _readable(cls, value: Any) -> Any:
        """A stored row as JSON can show it: a listing never fails on a row written by hand."""
        return readable(value)


class LimitInfo(Readable):
    models: list[str]
    max_budget: float | None
    budget_duration: str | None
    budget_reset_at: datetime | None
    spend: Cost
    tpm_limit: int | None
    rpm_limit: int | None
    max_parallel_requests: int | None
    blocked: bool
    metadata: dict[str, Any]
    allowed_routes: list[str] = Field(default_factory=list)
    allowed_passthrough_routes: list[str] = Field(default_factory=list)
    created_at: datetime | None
    updated_at: datetime | None


class KeyInfo(LimitInfo):
    token: str = Field(description="The key's id: its keyed hash, never the key")
    key_name: str | None = Field(description="What may be shown of the key: 'sk-abcd...'")
    key_alias: str | None
    team_id: str | None
    user_id: str | None = None
    expires: datetime | None
    tags: list[str]


class GenerateKeyResponse(KeyInfo):
    key: str = Field(description="The key itself: shown this once, keep it")


class KeyUsage(BaseModel):
    """What the key has spent, from the spend log and from the limits' live counters."""

    total_spend: Cost = Field(description="USD over the key's whole life, from the spend log's daily roll-ups")
    requests: int = Field(description="Requests in the spend log, failed ones included")
    period_spend: Cost | None = Field(default=None, description="USD the budget counts in its current period "
                                       "(requests in flight at their worst case); null when no budget is counted")
    period_start: datetime | None = None


class KeyInfoResponse(BaseModel):
    key: str = Field(description="The key's id (token)")
    info: KeyInfo
    usage: KeyUsage | None = None


class KeyListResponse(BaseModel):
    keys: list[str] | list[KeyInfo] = Field(description="Key ids, or whole records with return_full_object")
    total_count: int
    current_page: int
    total_pages: int


class DeleteKeysResponse(BaseModel):
    deleted_keys: list[str] = Field(description="The ids (tokens) of the keys deleted")


class TeamMember(BaseModel):
    """One of LiteLLM's ``members_with_roles``."""

    user_id: str
    user_email: str | None = None
    role: str


class TeamInfo(LimitInfo):
    team_id: str
    team_alias: str | None
    members_with_roles: list[TeamMember] = Field(default_factory=list)


class TeamListItem(TeamInfo):
    members_count: int = Field(0, description="How many members the team has")
    keys_count: int


class TeamListResponse(BaseModel):
    """LiteLLM's ``/v2/team/list`` answer."""

    teams: list[TeamListItem]
    total: int
    page: int
    page_size: int
    total_pages: int


class TeamInfoResponse(BaseModel):
    team_id: str
    team_info: TeamInfo
    keys: list[KeyInfo]


class DeleteTeamsResponse(BaseModel):
    deleted_teams: list[str]
    deleted_keys: int

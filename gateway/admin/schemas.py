"""The admin API's request and response bodies (pydantic), with LiteLLM's field names.

Every field is bounded: strings by length and alphabet, lists by count, numbers non-negative and
finite, ``metadata`` by its JSON size. Unknown fields are refused by name, so a LiteLLM field this
gateway does not act on (``user_id``, ``aliases``, ...) is never silently accepted.
A key appears in a response only as ``key`` of ``GenerateKeyResponse`` (creation and regeneration).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer, StringConstraints, field_validator

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


class LimitFields(Strict):
    """What keys and teams share: models, budget, limits, metadata, blocked."""

    models: Models | None = Field(None, description="Model groups it may call; empty: all (within the team's)")
    max_budget: Money | None = Field(None, description="USD per budget period; no limit when null")
    budget_duration: DurationText | None = Field(None, description="Budget period: 30s, 1h, 1d, 7d, 30d, 1mo")
    tpm_limit: Limit | None = None
    rpm_limit: Limit | None = None
    max_parallel_requests: Limit | None = None
    metadata: Metadata | None = None
    blocked: bool | None = None
    allowed_routes: Routes | None = Field(None, description="Routes it may call; empty: every decision route")
    allowed_passthrough_routes: Routes | None = Field(
        None, description="Pass-through routes it may call (/typesafe, /laya, /bespoke); empty: none "
                          "(a key without its own takes its team's)")


class KeyFields(LimitFields):
    key_alias: Alias | None = None
    team_id: TeamId | None = None
    tags: Tags | None = None


class GenerateKeyRequest(KeyFields):
    duration: DurationText | None = Field(None, description="Lifetime (e.g. 30d); never expires when null")


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


class LimitInfo(BaseModel):
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

    @field_validator("*", mode="before")
    @classmethod
    def _readable(cls, value: Any) -> Any:
        """A stored row as JSON can show it: a listing never fails on a row written by hand."""
        return readable(value)


class KeyInfo(LimitInfo):
    token: str = Field(description="The key's id: its keyed hash, never the key")
    key_name: str | None = Field(description="What may be shown of the key: 'sk-abcd...'")
    key_alias: str | None
    team_id: str | None
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


class TeamInfo(LimitInfo):
    team_id: str
    team_alias: str | None


class TeamListItem(TeamInfo):
    members_count: int = Field(0, description="Always 0: this gateway has no team members")
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

"""LiteLLM's /key/generate and /key/update fields over real HTTP: each one is either acted on or refused
with a 400 naming it as not supported here (never "not a recognised field"), and LiteLLM's defaults
for the refused ones, which its clients may send, are accepted."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from gateway.admin.schemas import UNSUPPORTED_KEY_FIELDS
from tests.admin.test_keys_api import error_of

MASTER = "sk-master-litellm-key-fields-0123456789"

# Every field of LiteLLM 1.110.2's GenerateKeyRequest (litellm/types/proxy/management_endpoints/).
LITELLM_GENERATE_FIELDS = {
    "key_alias", "duration", "models", "spend", "max_budget", "user_id", "team_id", "agent_id",
    "max_parallel_requests", "metadata", "tpm_limit", "rpm_limit", "budget_duration", "budget_limits",
    "allowed_cache_controls", "config", "permissions", "model_max_budget", "budget_fallbacks", "model_rpm_limit",
    "model_tpm_limit", "mcp_rpm_limit", "tag_rpm_limit", "guardrails", "policies", "prompts", "blocked", "aliases",
    "object_permission", "key", "tpd_limit", "default_estimated_output_tokens",
    "default_estimated_output_tokens_per_model", "budget_id", "end_user_budget_id", "tags",
    "disable_global_guardrails", "enable_prompt_caching", "throttle_on_budget_exceeded", "enforced_params",
    "allowed_routes", "allowed_passthrough_routes", "denied_passthrough_routes", "allowed_vector_store_indexes",
    "rpm_limit_type", "tpm_limit_type", "router_settings", "access_group_ids", "soft_budget", "send_invite_email",
    "key_type", "auto_rotate", "rotation_interval", "organization_id", "project_id",
}
LITELLM_UPDATE_ONLY = {"temp_budget_increase", "temp_budget_expiry"}
# A value LiteLLM would act on, for each field refused here.
SAMPLE = {"user_id": "u-1", "soft_budget": 5.0, "model_max_budget": {"jev": 1.0}, "aliases": {"a": "jev"},
          "config": {"x": 1}, "key": "sk-chosen-by-the-caller-0123456789", "key_type": "read_only",
          "auto_rotate": True, "rpm_limit_type": "dynamic", "tpd_limit": 10, "guardrails": ["g"],
          "temp_budget_expiry": "2030-01-01T00:00:00Z"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    from tests.conftest import start_gateway

    db = tmp_path_factory.mktemp("key-fields") / "gateway.db"
    running = start_gateway({
        "model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_key": "ts-k",
                                                                "api_base": "http://127.0.0.1:9/v1"}}],
        "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"}})
    yield running
    running.stop()


def post(gateway, path: str, body: dict) -> httpx.Response:
    return httpx.post(gateway.url + path, json=body, headers={"Authorization": f"Bearer {MASTER}"}, timeout=30)


def test_every_litellm_field_is_implemented_or_listed_as_not_supported():
    from gateway.admin.schemas import GenerateKeyRequest, UpdateKeyRequest

    assert LITELLM_GENERATE_FIELDS <= set(GenerateKeyRequest.model_fields)
    assert LITELLM_GENERATE_FIELDS | LITELLM_UPDATE_ONLY <= set(UpdateKeyRequest.model_fields)


@pytest.mark.parametrize("field", sorted(UNSUPPORTED_KEY_FIELDS) + ["key"])
def test_a_field_not_supported_here_is_refused_naming_it(gateway, field):
    value = SAMPLE.get(field, "value-not-echoed-42")
    refused = post(gateway, "/key/generate", {"key_alias": f"refused-{field}", field: value})
    error = error_of(refused, 400)
    assert error["param"] == field and error["message"].startswith(f"{field}: is not supported here ("), error
    assert "recognised" not in error["message"] and str(value) not in error["message"]
    if field != "key":
        made = post(gateway, "/key/generate", {}).json()["token"]
        update = error_of(post(gateway, "/key/update", {"key": made, field: value}), 400)
        assert update["param"] == field and "not supported here" in update["message"]


def test_litellm_defaults_of_the_refused_fields_are_accepted(gateway):
    """What LiteLLM's clients send for fields they leave alone: null, {}, [], false, key_type default."""
    defaults = {"user_id": None, "config": {}, "aliases": {}, "model_max_budget": {}, "permissions": {},
                "allowed_cache_controls": [], "metadata": {}, "key_type": "default", "auto_rotate": False,
                "soft_budget": None, "key": None}
    made = post(gateway, "/key/generate", {"key_alias": "defaults", **defaults})
    assert made.status_code == 200, made.text
    assert not set(UNSUPPORTED_KEY_FIELDS) & set(made.json())  # the answer carries no field it ignored


def test_spend_and_duration_are_implemented(gateway):
    made = post(gateway, "/key/generate", {"key_alias": "with-spend", "spend": 1.25, "duration": "2h",
                                           "max_budget": 10, "metadata": {"owner": "ops"}, "tags": ["a"]})
    assert made.status_code == 200, made.text
    body = made.json()
    assert body["spend"] == 1.25 and body["metadata"] == {"owner": "ops"} and body["tags"] == ["a"]
    expires = dt.datetime.fromisoformat(body["expires"])
    left = expires - dt.datetime.now(dt.UTC)
    assert dt.timedelta(hours=1, minutes=55) < left <= dt.timedelta(hours=2)
    info = httpx.get(gateway.url + "/key/info", params={"key": body["token"]},
                     headers={"Authorization": f"Bearer {MASTER}"}, timeout=30).json()["info"]
    assert info["spend"] == 1.25
    updated = post(gateway, "/key/update", {"key": body["token"], "spend": 0, "duration": "1d"}).json()
    assert updated["spend"] == 0 and dt.datetime.fromisoformat(updated["expires"]) > expires
    for bad in ({"spend": -1}, {"spend": "1"}, {"spend": float("1e13")}):
        assert error_of(post(gateway, "/key/generate", bad), 400)["param"] == "spend"

"""The configuration keys the gateway knows, in LiteLLM's vocabulary.

An existing LiteLLM ``config.yaml`` must load unchanged, so every section accepts the LiteLLM keys
people actually write, even those the gateway does not act on yet (they are kept on the config
object). A key outside these sets is a typo until proven otherwise and fails the start.
"""

from __future__ import annotations

from gateway.config.limits import SETTING_NAMES as LIMITS_SETTINGS  # the gateway's own hardening keys

TOP_LEVEL = frozenset({
    "model_list", "general_settings", "router_settings", "litellm_settings", "environment_variables",
    "credential_list", "callback_settings", "guardrails", "files_settings", "include",
})

MODEL_ENTRY = frozenset({"model_name", "litellm_params", "model_info"})

# litellm_params understood by LiteLLM for any provider.
LITELLM_PARAMS = frozenset({
    "model", "api_key", "api_base", "api_version", "timeout", "stream_timeout", "max_retries",
    "input_cost_per_token", "output_cost_per_token", "input_cost_per_second", "output_cost_per_second",
    "cache_read_input_token_cost", "cache_creation_input_token_cost", "input_cost_per_query",
    "cost_per_request",
    "rpm", "tpm", "max_parallel_requests", "weight", "order", "organization", "custom_llm_provider",
    "region_name", "headers", "extra_headers", "drop_params", "additional_drop_params", "tags",
    "litellm_credential_name", "use_in_pass_through", "mock_response", "budget_duration", "max_budget",
    "configurable_clientside_auth_params", "merge_reasoning_content_in_choices", "base_model",
    "use_litellm_proxy", "litellm_trace_id", "supports_images",
    "num_retries", "hedge_after_ms",  # per-deployment router settings
})

# Provider-specific litellm_params (kept in ``Deployment.params``): Cloudflare's account, OpenRouter's
# routing preferences and attribution, limit overrides, the bundled backend's loading options.
PROVIDER_PARAMS = frozenset({
    "account_id", "provider", "http_referer", "app_title", "limits", "max_questions", "max_options",
    "max_levels", "max_images", "max_context_tokens", "prompt_format_version", "temperature",
    "device", "dtype", "model_path", "checkpoint", "max_batch", "max_batch_tokens", "danger_zone",
    "integration", "modal_key", "modal_secret", "project", "asset_transport",
})

GENERAL_SETTINGS = frozenset({
    "master_key", "database_url", "redis_url", "decision_limits", "database_connection_pool_limit",
    "database_connection_timeout", "store_model_in_db", "store_prompts_in_spend_logs", "alerting",
    "alerting_threshold", "alert_types", "alert_to_webhook_url", "proxy_batch_write_at",
    "disable_spend_logs", "disable_master_key_return", "disable_reset_budget",
    "disable_retry_on_max_parallel_request_limit_error",
    "enforce_user_param", "allowed_routes", "admin_only_routes", "public_routes", "custom_auth",
    "custom_key_generate", "background_health_checks", "health_check_interval", "health_check_details",
    "infer_model_from_keys", "max_parallel_requests", "global_max_parallel_requests",
    "max_request_size_mb", "max_response_size_mb", "proxy_budget_rescheduler_min_time",
    "proxy_budget_rescheduler_max_time", "ui_access_mode", "use_redis_transaction_buffer",
    "allow_requests_on_db_unavailable", "pass_through_endpoints", "maximum_spend_logs_retention_period",
    "key_management_system", "key_management_settings", "use_x_forwarded_for", "user_header_name",
    "forward_client_headers_to_llm_api", "litellm_key_header_name", "service_account_settings",
    # the gateway's own: key hashing, migrations, spend content, limits while Redis is away
    "salt_key", "auto_migrate", "store_content", "limits_on_redis_failure",
    # metrics and traces (gateway/observability)
    "public_metrics", "otel_endpoint", "otel_service_name",
    # readiness while a dependency is down (gateway/health/readiness.py)
    "ready_while_db_down", "ready_while_redis_down",
    # browser requests from other origins (gateway/edge/cross_site.py)
    "allowed_origins",
    # start without the provider keys some deployments need (gateway/config/credentials.py)
    "allow_missing_keys",
    # the decision log and calibration (gateway/decisionlog/settings.py)
    "decision_log", "calibration",
}) | LIMITS_SETTINGS

ROUTER_SETTINGS = frozenset({
    "routing_strategy", "routing_strategy_args", "num_retries", "timeout", "stream_timeout",
    "fallbacks", "context_window_fallbacks", "content_policy_fallbacks", "default_fallbacks",
    "allowed_fails", "allowed_fails_policy", "cooldown_time", "retry_policy", "retry_after",
    "max_fallbacks", "enable_pre_call_checks", "model_group_alias", "redis_host", "redis_port",
    "redis_password", "redis_url", "cache_responses", "disable_cooldowns", "enable_tag_filtering",
    "optional_pre_call_checks", "provider_budget_config", "model_group_retry_policy", "default_max_parallel_requests",
    "default_priority", "polling_interval", "set_verbose", "debug_level",
    # the gateway's own: per-group router settings, capacity fallbacks, hedging and deadlines
    "model_group_settings", "capacity_fallbacks", "hedge_after_ms", "deadline_ms",
})

LITELLM_SETTINGS = frozenset({
    "num_retries", "drop_params", "request_timeout", "set_verbose", "json_logs", "success_callback",
    "failure_callback", "callbacks", "service_callback", "cache", "cache_params", "context_window_fallbacks",
    "default_fallbacks", "fallbacks", "max_budget", "budget_duration", "modify_params",
    "turn_off_message_logging", "redact_user_api_key_info", "enable_preview_features", "force_ipv4",
    "default_team_settings", "default_internal_user_params", "max_internal_user_budget",
    "internal_user_budget_duration", "upperbound_key_generate_params", "default_key_generate_params",
    "key_generation_settings", "ssl_verify", "disable_end_user_cost_tracking", "allowed_fails",
    "cooldown_time", "retry_policy", "suppress_debug_info", "telemetry", "return_response_headers",
    "enable_json_schema_validation", "disable_add_prefix_to_prompt", "mcp_aliases",
    "respect_local_model_cost_map", "extra_spend_tag_headers", "logging_callback_params",
})

"""Config loading: LiteLLM's shape, os.environ/ values, and start-up errors that name the entry."""

from __future__ import annotations

import pytest

from gateway.config.errors import ConfigError
from gateway.config.loader import build_config, load_config
from gateway.config.registry import ModelRegistry
from providers.registry import PROVIDERS


def model_names(config) -> list[str]:
    return list(ModelRegistry.from_config(config).names)


def group(config, name: str) -> list:
    return list(ModelRegistry.from_config(config).group(name))

LITELLM_CONFIG = """
model_list:
  - model_name: luna
    litellm_params:
      model: openai/gpt-6-luna
      api_key: os.environ/OPENAI_API_KEY
      timeout: 12
      input_cost_per_token: 0.0000002
      organization: org-1
    model_info: {description: "OpenAI decisions", release_date: "2026-10-06"}
  - model_name: jev
    litellm_params:
      model: typesafe/jev-latest
      api_key: os.environ/TYPESAFE_API_KEY
      api_base: http://127.0.0.1:9/v1
      rpm: 60
  - model_name: jev
    litellm_params:
      model: typesafe/jev-1.14.0
      api_key: os.environ/TYPESAFE_API_KEY
general_settings:
  master_key: os.environ/MASTER_KEY
  database_url: sqlite:///gateway.db
  decision_limits: {max_questions: 64, openai_max_levels: 5}
router_settings: {routing_strategy: simple-shuffle, num_retries: 2}
litellm_settings: {num_retries: 3, drop_params: true, set_verbose: false}
"""

ENV = {"OPENAI_API_KEY": "sk-openai", "TYPESAFE_API_KEY": "ts-key", "MASTER_KEY": "sk-master"}


def write(tmp_path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_litellm_config_loads_with_env_values_and_settings(tmp_path):
    config = load_config(write(tmp_path, LITELLM_CONFIG), ENV)
    assert model_names(config) == ["luna", "jev"]
    luna = group(config, "luna")[0]
    assert (luna.provider, luna.model, luna.api_key, luna.timeout) == ("openai", "gpt-6-luna", "sk-openai", 12.0)
    assert luna.input_cost_per_token == pytest.approx(2e-7)
    assert luna.params == {"organization": "org-1"}
    assert luna.model_info["release_date"] == "2026-10-06"
    jev = group(config, "jev")
    assert [d.model for d in jev] == ["jev-latest", "jev-1.14.0"]
    assert jev[0].api_base == "http://127.0.0.1:9/v1" and jev[0].rpm == 60
    assert jev[0].id and jev[0].id != jev[1].id
    # a relative SQLite path is the file beside the config file (README: database_url)
    assert config.master_key == "sk-master" and config.database_url == f"sqlite:///{tmp_path / 'gateway.db'}"
    assert config.request_limits.max_questions == 64 and config.request_limits.openai_max_levels == 5
    assert config.litellm_settings == {"num_retries": 3, "drop_params": True, "set_verbose": False}
    assert config.router_settings["num_retries"] == 2


def test_provider_defaults_fill_the_key_and_base_from_the_environment():
    config = build_config({"model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest"}}]},
                          {"TYPESAFE_API_KEY": "from-env"})
    dep = config.deployments[0]
    assert dep.api_key == "from-env"
    assert dep.api_base == "https://api.typesafe.ai"


def test_a_group_holds_all_its_deployments(tmp_path):
    config = load_config(write(tmp_path, LITELLM_CONFIG), ENV)
    assert {dep.model for dep in group(config, "jev")} == {"jev-latest", "jev-1.14.0"}
    assert group(config, "nope") == []


def test_unknown_provider_lists_the_known_ones():
    with pytest.raises(ConfigError) as err:
        build_config({"model_list": [{"model_name": "x", "litellm_params": {"model": "anthropic/claude"}}]}, {})
    message = str(err.value)
    assert "model_list[0] (x).litellm_params.model" in message and "anthropic" in message
    for name in PROVIDERS:
        assert name in message


def test_missing_environment_variable_names_the_entry_and_variable():
    raw = {"model_list": [{"model_name": "jev", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": "os.environ/NOT_SET_ANYWHERE"}}]}
    with pytest.raises(ConfigError, match=r"model_list\[0\] \(jev\)\.litellm_params\.api_key: environment variable "
                                          r"NOT_SET_ANYWHERE is not set, and provider 'typesafe' needs an API key"):
        build_config(raw, {})


@pytest.mark.parametrize("raw, where, key", [
    ({"model_lists": []}, "model_lists: unknown top-level key; did you mean 'model_list'", "model_lists"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j"}, "modelinfo": {}}]},
     "model_list[0]", "modelinfo"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_kye": "k"}}]},
     "model_list[0] (a).litellm_params", "api_kye"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_key": "k"}}],
      "general_settings": {"master_kee": "x"}}, "general_settings", "master_kee"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_key": "k"}}],
      "litellm_settings": {"num_retry": 1}}, "litellm_settings", "num_retry"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_key": "k"}}],
      "general_settings": {"decision_limits": {"max_question": 3}}}, "general_settings.decision_limits",
     "max_question"),
])
def test_unknown_keys_fail_at_every_level(raw, where, key):
    with pytest.raises(ConfigError) as err:
        build_config(raw, {})
    assert err.value.problems[0].startswith(where) and key in str(err.value)


@pytest.mark.parametrize("raw, expected", [
    ({"model_list": [{"model_name": "a", "litellm_params": {"api_key": "k"}}]}, r"litellm_params\.model: missing"),
    ({"model_list": [{"model_name": "a"}]}, r"litellm_params: missing"),
    ({"model_list": [{"litellm_params": {"model": "typesafe/j"}}]}, r"model_list\[0\]\.model_name: missing"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "gpt-6-luna"}}]}, "no provider prefix"),
    ({"model_list": []}, "no models configured"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_key": "k",
                                                            "timeout": "soon"}}]}, r"timeout: expected float"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_key": "k", "timeout": 0}}]},
     r"model_list\[0\] \(a\)\.litellm_params\.timeout: must be a positive number of seconds, got 0"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_key": "k"}}],
      "router_settings": {"timeout": -5}}, r"litellm_params\.timeout: must be a positive number of seconds, got -5"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_key": "k",
                                                            "input_cost_per_token": -1e-7}}]},
     r"input_cost_per_token: must not be negative"),
    ([1, 2], "top level must be a mapping"),
    ({"model_list": [{"model_name": "a", "litellm_params": {"model": "typesafe/j", "api_key": 31415926535}}]},
     r"api_key: expected str, got a value of type int$"),
])
def test_invalid_entries_are_named(raw, expected):
    with pytest.raises(ConfigError, match=expected):
        build_config(raw, {})


def test_unreadable_and_invalid_yaml_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.yaml", {})
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "model_list: [unclosed"), {})


def test_environment_variables_section_feeds_os_environ_values():
    raw = {"environment_variables": {"TS_KEY": "from-section"},
           "model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest",
                                                                    "api_key": "os.environ/TS_KEY"}}]}
    assert build_config(raw, {}).deployments[0].api_key == "from-section"


def test_the_embedded_default_serves_the_bundled_small_model():
    config = load_config(None, {})
    assert model_names(config) == ["smollm2"]
    assert (config.deployments[0].provider, config.deployments[0].model) == ("local", "smollm2")


def test_the_example_config_loads():
    from pathlib import Path

    config = load_config(Path(__file__).resolve().parents[2] / "config.example.yaml", {})
    assert "smollm2" in model_names(config)


def test_the_readme_config_reference_loads():
    import re
    from pathlib import Path

    import yaml

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", readme, re.S).group(1)
    env = {name: "x" for name in re.findall(r"os\.environ/(\w+)", block)}
    config = build_config(yaml.safe_load(block), env)
    assert model_names(config) == ["jev"] and len(group(config, "jev")) == 2
    assert config.request_limits.max_questions == 400


@pytest.mark.parametrize("entry, words", [
    ({"model_info": {"max_questions": 0}}, "model_list[0] (c).model_info.max_questions: must be a whole number of at least 1"),
    ({"model_info": {"max_levels": "ten"}}, "model_info.max_levels: must be a whole number of at least 1, or null for no limit; got 'ten'"),
    ({"litellm_params": {"model": "cloudflare/clef", "account_id": "a", "api_key": "k", "max_options": -3}},
     "litellm_params.max_options: must be a whole number"),
])
def test_a_limit_override_that_would_be_ignored_stops_the_start(entry, words):
    raw = {"model_list": [{"model_name": "c", "litellm_params": {"model": "cloudflare/clef", "account_id": "a",
                                                                  "api_key": "k"}, **entry}]}
    with pytest.raises(ConfigError) as err:
        build_config(raw, {})
    assert words in str(err.value)

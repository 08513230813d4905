"""Values the config used to accept and then misbehave on (issue 19, item 12): refused at load naming the entry;
and the YAML itself bounded (its size, what its aliases expand to)."""

from __future__ import annotations

import pytest

from gateway.config.errors import ConfigError
from gateway.config.loader import load_config
from gateway.config.yaml_bounds import MAX_CONFIG_BYTES, MAX_EXPANDED_NODES

ENTRY = """model_list:
  - model_name: jev
    litellm_params:
      model: typesafe/jev-latest
      api_key: ts-key
"""


def load(tmp_path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, {})


@pytest.mark.parametrize("extra, named", [
    ("      input_cost_per_token: .nan\n", "model_list[0] (jev).litellm_params.input_cost_per_token"),
    ("      output_cost_per_token: .inf\n", "model_list[0] (jev).litellm_params.output_cost_per_token"),
    ("      cache_read_input_token_cost: .nan\n", "model_list[0] (jev).litellm_params.cache_read_input_token_cost"),
    ("      timeout: .nan\n", "model_list[0] (jev).litellm_params.timeout"),
    ("      rpm: .inf\n", "model_list[0] (jev).litellm_params.rpm"),
    ("      weight: -1\n", "model_list[0] (jev).litellm_params.weight"),
    ("      weight: .nan\n", "model_list[0] (jev).litellm_params.weight"),
    ("      num_retries: 1e9\n", "model_list[0] (jev).litellm_params.num_retries"),
    ("      num_retries: 1000000000\n", "model_list[0] (jev).litellm_params.num_retries"),
    ("      hedge_after_ms: .inf\n", "model_list[0] (jev).litellm_params.hedge_after_ms"),
    ("      extra_headers: x\n", "model_list[0] (jev).litellm_params.extra_headers"),
    ("      extra_headers: {'bad name': v}\n", "model_list[0] (jev).litellm_params.extra_headers"),
    ('      headers: {X-Team: "a\\r\\nX-Injected: 1"}\n', "model_list[0] (jev).litellm_params.headers"),
    ("router_settings: {cooldown_time: .inf}\n", "router_settings.cooldown_time"),
    ("router_settings: {cooldown_time: .nan}\n", "router_settings.cooldown_time"),
    ("router_settings: {num_retries: 1000000000}\n", "router_settings.num_retries"),
    ("litellm_settings: {num_retries: 1000000000}\n", "litellm_settings.num_retries"),
    ("router_settings: {model_group_settings: {jev: {deadline_ms: .inf}}}\n",
     "router_settings.model_group_settings.jev.deadline_ms"),
])
def test_a_value_that_would_misbehave_is_refused_at_load_naming_the_entry(tmp_path, extra: str, named: str):
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, ENTRY + extra)
    assert str(refused.value).startswith(named + ":"), str(refused.value)


def test_sound_values_still_load(tmp_path):
    config = load(tmp_path, ENTRY + "      weight: 0\n      num_retries: 3\n      input_cost_per_token: 0.000001\n"
                                   "      extra_headers: {X-Team: blue, X-Version: 2}\n"
                                   "router_settings: {cooldown_time: 30, num_retries: 2}\n")
    params = config.deployments[0].params
    assert params["weight"] == 0 and params["num_retries"] == 3 and params["extra_headers"]["X-Team"] == "blue"


def alias_bomb(levels: int, width: int = 9) -> str:
    """``levels`` anchors, each a list of ``width`` aliases of the one before: width**levels values, a few
    hundred bytes. It sits where any value is accepted (model_info), so only the bound refuses it."""
    lines = [f"x0: &x0 [{', '.join(['lol'] * width)}]"]
    lines += [f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * width)}]" for i in range(1, levels)]
    anchors = "\n".join("      " + line for line in lines)
    return ENTRY + f"    model_info:\n      notes:\n{anchors}\n      all: *x{levels - 1}\n"


def test_a_yaml_alias_bomb_is_refused_before_it_is_expanded(tmp_path):
    text = alias_bomb(6)  # 9**6 = 531441 values from about 400 bytes
    assert 9**6 > MAX_EXPANDED_NODES and len(text) < 1024
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, text)
    message = str(refused.value)
    assert "config.yaml" in message and "aliases" in message and f"{MAX_EXPANDED_NODES}" in message, message
    with pytest.raises(ConfigError, match="aliases"):
        load(tmp_path, alias_bomb(12))  # 9**12 values: refused as fast, never built


def test_a_few_anchors_load(tmp_path):
    config = load(tmp_path, """model_list:
  - model_name: jev
    litellm_params: &shared
      model: typesafe/jev-latest
      api_key: ts-key
  - model_name: jev-too
    litellm_params: *shared
""")
    assert [d.model_name for d in config.deployments] == ["jev", "jev-too"]


def test_a_recursive_alias_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="contains it"):
        load(tmp_path, ENTRY + "    model_info: &loop {again: *loop}\n")


def test_a_file_over_the_size_bound_is_refused_naming_it(tmp_path):
    padding = "# " + "x" * 1000 + "\n"
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, ENTRY + padding * (MAX_CONFIG_BYTES // len(padding) + 1))
    assert "config.yaml" in str(refused.value) and f"{MAX_CONFIG_BYTES}" in str(refused.value)


def test_a_file_that_is_not_utf8_is_refused_naming_it_and_the_byte(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(ENTRY.encode() + b"# caf\xe9\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path, {})
    assert str(refused.value).startswith(f"{path}: not UTF-8 text: byte {len(ENTRY) + 5} is 0xe9"), refused.value

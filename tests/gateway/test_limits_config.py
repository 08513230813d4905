"""Issue 8 item 10 and the limits settings: refused at start with a message naming the entry.

A deployment ``api_base`` with ``user:password@`` made every request to it answer 500; now it stops
the start, naming the entry and never echoing the password. The limits and hardening settings in
``general_settings`` are validated with their defaults documented in the README.
"""

from __future__ import annotations

import pytest

from gateway.config.errors import ConfigError
from gateway.config.limits import LimitsSettings
from gateway.config.loader import build_config

PASSWORD = "hunter2-very-secret"


def config_with(api_base: str | None = None, **general) -> dict:
    params = {"model": "typesafe/jev-latest", "api_key": "k"}
    if api_base is not None:
        params["api_base"] = api_base
    return {"model_list": [{"model_name": "jev", "litellm_params": params}], "general_settings": general}


@pytest.mark.parametrize("api_base", [f"https://user:{PASSWORD}@api.typesafe.ai", f"http://:{PASSWORD}@host/v1",
                                      f"https://{PASSWORD}@api.typesafe.ai"])
def test_an_api_base_with_credentials_stops_the_start_without_echoing_them(api_base):
    with pytest.raises(ConfigError) as err:
        build_config(config_with(api_base), {})
    message = str(err.value)
    assert message.startswith("model_list[0] (jev).litellm_params.api_base:") and "user name or password" in message
    assert PASSWORD not in message


def test_an_api_base_with_credentials_from_the_environment_is_refused_too():
    with pytest.raises(ConfigError) as err:
        build_config(config_with(), {"TYPESAFE_API_BASE": f"https://u:{PASSWORD}@h"})
    assert "model_list[0] (jev)" in str(err.value) and PASSWORD not in str(err.value)


@pytest.mark.parametrize("api_base, words", [("ftp://host", "http:// or https://"), ("https://", "with a host"),
                                             ("http://host:notaport", "not a valid URL")])
def test_an_api_base_must_be_an_http_url(api_base, words):
    with pytest.raises(ConfigError) as err:
        build_config(config_with(api_base), {})
    assert words in str(err.value)


def test_plain_api_bases_still_load():
    for base in ("https://api.typesafe.ai", "http://127.0.0.1:8080/v1", "local://smollm2"):
        assert build_config(config_with(base), {}).deployments[0].api_base == base


def test_limits_have_their_documented_defaults():
    limits = build_config(config_with(), {}).limits
    assert limits == LimitsSettings()
    assert (limits.max_request_body_bytes, limits.max_json_depth, limits.max_multipart_parts,
            limits.max_upstream_response_bytes, limits.request_read_timeout_s) == (16 * 1024 * 1024, 64, 64,
                                                                                    16 * 1024 * 1024, 30.0)


def test_limits_are_read_from_general_settings():
    limits = build_config(config_with(max_json_depth=10, request_read_timeout_s=2.5,
                                      max_request_body_bytes=1024), {}).limits
    assert (limits.max_json_depth, limits.request_read_timeout_s, limits.max_request_body_bytes) == (10, 2.5, 1024)


@pytest.mark.parametrize("key, value", [("max_json_depth", 0), ("max_json_depth", -1), ("max_json_depth", 2.5),
                                        ("max_request_body_bytes", "16MiB"), ("request_read_timeout_s", True),
                                        ("max_multipart_parts", float("inf"))])
def test_unusable_limits_stop_the_start_naming_the_key(key, value):
    with pytest.raises(ConfigError) as err:
        build_config(config_with(**{key: value}), {})
    assert str(err.value).startswith(f"general_settings.{key}:")


def test_a_misspelt_limit_is_an_unknown_key():
    with pytest.raises(ConfigError) as err:
        build_config(config_with(max_json_dept=10), {})
    assert "general_settings.max_json_dept: unknown key; did you mean 'max_json_depth'?" in str(err.value)


def test_the_readme_limits_section_shows_the_defaults():
    import re
    from pathlib import Path

    import yaml

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Limits and hardening settings", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    general = yaml.safe_load(block)["general_settings"]
    assert build_config(config_with(**general), {}).limits == LimitsSettings()
    assert set(general) == {f for f in LimitsSettings.__dataclass_fields__}

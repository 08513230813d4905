"""Config errors, all at once (issue 20 item 5): every problem of a config in one run, each naming its
entry, a "did you mean" for misspelt keys; a deployment without the key its provider needs fails the
start, or with ``general_settings.allow_missing_keys: true`` is unconfigured in readiness and answers
503 naming the deployment and the setting, never a 401. Keys never appear in the errors or the logs.

Real loads, real CLI processes and real gateway processes over HTTP (tests/operations/conftest.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from gateway.config.errors import ConfigError
from gateway.config.loader import build_config
from tests.operations.conftest import KEY, MASTER, GatewayProcess, SlowTypeSafe, auth, body, entry, write_config

ROOT = Path(__file__).resolve().parents[2]
SECRET = "ts-secret-never-shown-4242424242"
UNSET = "DECISIONS_GATEWAY_TEST_NEVER_SET_KEY"
# The provider variables a key may come from: a run must not find one in the machine's environment.
PROVIDER_KEYS = ("TYPESAFE_API_KEY", "OPENAI_API_KEY", "PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY",
                 "OPENROUTER_API_KEY", "CLOUDFLARE_API_KEY", "CLOUDFLARE_API_TOKEN", UNSET)

MANY_ERRORS = {
    "model_list": [
        {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest", "api_kye": SECRET}},
        {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna", "api_key": SECRET, "timeout": 0,
                                                  "rpm": -1}},
        {"model_name": "x", "litellm_params": {"model": "nowhere/m", "api_key": SECRET}},
        {"model_name": "ok", "litellm_params": {"model": "typesafe/jev-latest", "api_key": SECRET},
         "modelinfo": {}},
    ],
    "general_settings": {"master_kee": SECRET, "decision_limits": {"max_question": 3}, "max_json_depth": -1},
    "router_settings": {"num_retires": 2},
    "litellm_settings": {"drop_param": True},
}


def problems_of(raw: dict, environ: dict | None = None) -> list[str]:
    with pytest.raises(ConfigError) as err:
        build_config(raw, environ or {})
    assert SECRET not in str(err.value)
    return err.value.problems


def test_every_problem_is_reported_at_once_each_naming_its_entry():
    problems = problems_of(MANY_ERRORS)
    expected = [
        "model_list[0] (jev).litellm_params.api_kye: unknown key; did you mean 'api_key'?",
        "model_list[1] (luna).litellm_params.timeout: must be a positive number of seconds, got 0",
        "model_list[1] (luna).litellm_params.rpm: must not be negative, got -1",
        "model_list[2] (x).litellm_params.model: Model 'nowhere/m' names an unknown provider 'nowhere'",
        "model_list[3].modelinfo: unknown key; did you mean 'model_info'?",
        "general_settings.master_kee: unknown key; did you mean 'master_key'?",
        "general_settings.decision_limits.max_question: unknown key; did you mean 'max_questions'?",
        "general_settings.max_json_depth: must be positive and finite, got -1",
        "router_settings.num_retires: unknown key; did you mean 'num_retries'?",
        "litellm_settings.drop_param: unknown key; did you mean 'drop_params'?",
    ]
    for text in expected:
        assert any(p.startswith(text) for p in problems), (text, problems)
    # the misspelt key is the problem of that entry; "api_key: missing" would send the reader elsewhere
    assert not any(p.startswith("model_list[0] (jev).litellm_params.api_key") for p in problems)
    assert not any("known keys:" in p for p in problems)  # no wall of 65 names


def test_a_deployment_without_its_provider_key_is_refused_naming_the_entry_and_the_setting():
    raw = {"model_list": [
        {"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest"}},
        {"model_name": "luna", "litellm_params": {"model": "openai/gpt-6-luna", "api_key": f"os.environ/{UNSET}"}},
        {"model_name": "laya", "litellm_params": {"model": "laya/m", "api_base": "http://127.0.0.1:9"}},
    ]}
    problems = problems_of(raw)
    assert problems == [
        "model_list[0] (jev).litellm_params.api_key: missing; set litellm_params.api_key (or TYPESAFE_API_KEY), "
        "and provider 'typesafe' needs an API key (general_settings.allow_missing_keys: true starts the gateway "
        "without it, the deployment answering 503 until it is set)",
        f"model_list[1] (luna).litellm_params.api_key: environment variable {UNSET} is not set, and provider "
        "'openai' needs an API key (general_settings.allow_missing_keys: true starts the gateway without it, the "
        "deployment answering 503 until it is set)",
    ]  # laya takes no key: not a problem
    # the entry's own variable, not set, is not replaced by the provider's: the entry asked for that one
    assert problems_of(raw, {"OPENAI_API_KEY": SECRET, "TYPESAFE_API_KEY": SECRET})[0].startswith(
        f"model_list[1] (luna).litellm_params.api_key: environment variable {UNSET} is not set")


def test_allow_missing_keys_keeps_them_unconfigured_and_must_be_a_boolean():
    raw = {"model_list": [{"model_name": "jev", "litellm_params": {"model": "typesafe/jev-latest"}}],
           "general_settings": {"allow_missing_keys": True}}
    config = build_config(raw, {})
    dep = config.deployments[0]
    assert dep.api_key is None and list(config.unconfigured) == [dep.id]
    assert config.unconfigured[dep.id].startswith("model_list[0] (jev).litellm_params.api_key: missing")
    assert problems_of({**raw, "general_settings": {"allow_missing_keys": "yes"}}) == [
        "general_settings.allow_missing_keys: must be true or false, got 'yes'",
        "model_list[0] (jev).litellm_params.api_key: missing; set litellm_params.api_key (or TYPESAFE_API_KEY), "
        "and provider 'typesafe' needs an API key (general_settings.allow_missing_keys: true starts the gateway "
        "without it, the deployment answering 503 until it is set)"]


def test_a_variable_that_is_not_set_is_said_once_and_every_one_is_said():
    raw = {"model_list": [{"model_name": "a", "litellm_params": {"model": "os.environ/DG_TEST_UNSET_MODEL"}}],
           "general_settings": {"master_key": "os.environ/DG_TEST_UNSET_MASTER"}}
    assert problems_of(raw) == ["model_list[0].litellm_params.model: environment variable DG_TEST_UNSET_MODEL is not set",
                                "general_settings.master_key: environment variable DG_TEST_UNSET_MASTER is not set"]


def env_without_keys() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}


def test_the_cli_prints_every_error_one_a_line_and_exits_2(tmp_path):
    import json

    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(MANY_ERRORS))
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "--config", str(path)], capture_output=True,
                            text=True, cwd=ROOT, timeout=120, env=env_without_keys())
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("decisions-gateway: config error: ")]
    assert lines[0] == f"decisions-gateway: {len(errors)} config errors in {path}; nothing was started:"
    assert len(errors) >= 10
    assert "decisions-gateway: config error: model_list[0] (jev).litellm_params.api_kye: unknown key; did you " \
           "mean 'api_key'?" in lines
    assert "decisions-gateway: config error: router_settings.num_retires: unknown key; did you mean " \
           "'num_retries'?" in lines
    assert SECRET not in result.stderr + result.stdout
    assert "listening" not in result.stdout


def test_the_cli_refuses_to_start_a_deployment_without_its_key(tmp_path):
    path = tmp_path / "nokey.yaml"
    path.write_text("model_list:\n  - model_name: jev\n    litellm_params: {model: typesafe/jev-latest}\n")
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "--config", str(path)], capture_output=True,
                            text=True, cwd=ROOT, timeout=120, env=env_without_keys())
    assert result.returncode == 2
    assert ("decisions-gateway: config error: model_list[0] (jev).litellm_params.api_key: missing; set "
            "litellm_params.api_key (or TYPESAFE_API_KEY)") in result.stderr


@contextmanager
def gateway_process(tmp_path: Path, entries, **general) -> Iterator[tuple[GatewayProcess, SlowTypeSafe, Path]]:
    """A gateway process on a config file of ``entries`` (``upstream_url`` filled in), with its fake upstream."""
    with SlowTypeSafe() as upstream:
        path = write_config(tmp_path / "gateway.yaml", entries(upstream.url), **general)
        gateway = GatewayProcess.start(path, tmp_path)
        try:
            yield gateway, upstream, path
        finally:
            gateway.stop()


def test_allow_missing_keys_starts_reports_unconfigured_and_answers_503_naming_the_setting(tmp_path):
    unset = {"api_key": f"os.environ/{UNSET}"}

    def entries(url: str) -> list[dict]:  # every deployment of jev lacks its key, one of mixed's two does
        return [entry("jev", url, **unset), entry("mixed", url), entry("mixed", url, **unset, weight=1000)]

    with gateway_process(tmp_path, entries, allow_missing_keys=True) as (gateway, upstream, _):
        public = httpx.get(f"{gateway.url}/health/readiness", timeout=10)
        assert public.status_code == 200 and public.json()["status"] == "degraded"
        assert public.json()["degraded"] == ["deployments"]
        assert public.json()["checks"]["deployments"] == {"state": "unconfigured", "count": 2}
        detailed = httpx.get(f"{gateway.url}/health/readiness", headers=auth(), timeout=10).json()
        listed = detailed["checks"]["deployments"]["unconfigured"]
        assert [(d["model_group"], d["deployment"]) for d in listed] == [("jev", "typesafe/jev-latest"),
                                                                         ("mixed", "typesafe/jev-latest")]
        assert listed[0]["error"].startswith(f"model_list[0] (jev).litellm_params.api_key: environment "
                                             f"variable {UNSET} is not set")

        s1 = httpx.post(f"{gateway.url}/v1/systemone", json=body("jev"), headers=auth(), timeout=30)
        assert s1.status_code == 503, s1.text
        detail = s1.json()["detail"]
        assert detail["error_type"] == "deployment_not_configured"
        assert "Deployment 'typesafe/jev-latest' of model group 'jev' is not configured" in detail["message"]
        assert f"litellm_params.api_key: environment variable {UNSET} is not set" in detail["message"]
        oai = httpx.post(f"{gateway.url}/v1/decisions", headers=auth(), timeout=30, json={
            "model": "jev", "input": "Charged twice.",
            "questions": [{"type": "predicate", "name": "refund", "instructions": "Refund?"}]})
        assert oai.status_code == 503, oai.text
        assert oai.json()["error"]["code"] == "deployment_not_configured"
        assert "model group 'jev'" in oai.json()["error"]["message"]
        checked = httpx.post(f"{gateway.url}/v1/systemone/validate", json=body("jev"), headers=auth(), timeout=30)
        assert checked.status_code == 503 and checked.json()["detail"]["error_type"] == "deployment_not_configured"
        assert upstream.requests == []  # nothing was sent without a key

        for _ in range(5):  # the group's configured deployment answers every request, however weighted
            assert httpx.post(f"{gateway.url}/v1/systemone", json=body("mixed"), headers=auth(),
                              timeout=30).status_code == 200
        assert len(upstream.requests) == 5
        providers = httpx.get(f"{gateway.url}/health/providers", headers=auth(), timeout=10).json()
        assert [d["state"] == "unconfigured" for d in providers["deployments"]] == [True, False, True]
    assert KEY not in gateway.log() and MASTER not in gateway.log()
    assert f"warning: model_list[0] (jev).litellm_params.api_key: environment variable {UNSET}" in gateway.log()


def test_a_reload_reports_every_error_and_keeps_the_running_config(tmp_path):
    with gateway_process(tmp_path, lambda url: [entry("jev", url)]) as (gateway, upstream, path):
        bad = entry("luna", upstream.url, api_kye=SECRET)
        write_config(path, [entry("jev", upstream.url), bad], router={"num_retires": 1})
        refused = httpx.post(f"{gateway.url}/config/reload", headers=auth(), timeout=30)
        assert refused.status_code == 400
        message = refused.json()["error"]["message"]
        assert "running config stays" in message and "2 problems in" in message
        assert "model_list[1] (luna).litellm_params.api_kye: unknown key; did you mean 'api_key'?" in message
        assert "router_settings.num_retires: unknown key; did you mean 'num_retries'?" in message

        gateway.signal(signal.SIGHUP)
        log = gateway.wait_for_log("config reload on SIGHUP failed")
        assert "api_kye: unknown key; did you mean 'api_key'?" in log and "num_retires" in log
        ready = httpx.get(f"{gateway.url}/health/readiness", headers=auth(), timeout=10).json()
        assert "num_retires" in ready["config"]["last_reload_error"]
        assert ready["config"]["generation"] == 1
        assert httpx.post(f"{gateway.url}/v1/systemone", json=body("jev"), headers=auth(),
                          timeout=30).status_code == 200

        keyless = {"model_name": "luna", "litellm_params": {"model": "typesafe/jev-latest", "api_base": upstream.url,
                                                            "api_key": f"os.environ/{UNSET}"}}
        write_config(path, [entry("jev", upstream.url), keyless], allow_missing_keys=True)
        reloaded = httpx.post(f"{gateway.url}/config/reload", headers=auth(), timeout=30)
        assert reloaded.status_code == 200 and reloaded.json()["added"] == ["luna"]
        assert reloaded.json()["unconfigured"] == [
            f"model_list[1] (luna).litellm_params.api_key: environment variable {UNSET} is not set, and provider "
            "'typesafe' needs an API key"]
        luna = httpx.post(f"{gateway.url}/v1/systemone", json=body("luna"), headers=auth(), timeout=30)
        assert luna.status_code == 503 and luna.json()["detail"]["error_type"] == "deployment_not_configured"
        ready = httpx.get(f"{gateway.url}/health/readiness", timeout=10).json()
        assert ready["checks"]["deployments"] == {"state": "unconfigured", "count": 1}
    assert SECRET not in gateway.log() and KEY not in gateway.log()

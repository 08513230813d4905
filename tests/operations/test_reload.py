"""Reloading the config under load: SIGHUP and ``POST /config/reload`` add model groups without a
single request failing, requests in flight finish on the config they started with, and a broken
file keeps the running config and names the entry."""

from __future__ import annotations

import asyncio
import signal

import httpx

from tests.operations.conftest import (
    KEY,
    MASTER,
    GatewayProcess,
    Load,
    SlowTypeSafe,
    auth,
    body,
    entry,
    wait_until,
    write_config,
)


def answers(url: str, model: str) -> int:
    return httpx.post(f"{url}/v1/systemone", json=body(model), headers=auth(), timeout=30).status_code


def test_sighup_and_post_add_model_groups_while_a_load_runs_and_no_request_fails(tmp_path):
    with SlowTypeSafe(delay=0.02) as upstream:
        path = tmp_path / "gateway.yaml"
        write_config(path, [entry("jev", upstream.url)])
        gateway = GatewayProcess.start(path, tmp_path)
        try:
            async def scenario() -> tuple[Load, httpx.Response, httpx.Response, httpx.Response]:
                load = Load(gateway.url)
                running = asyncio.ensure_future(load.run())
                await asyncio.sleep(0.5)
                write_config(path, [entry("jev", upstream.url), entry("luna", upstream.url)])
                gateway.signal(signal.SIGHUP)
                await asyncio.to_thread(wait_until, lambda: answers(gateway.url, "luna") == 200, 20,
                                        "the group added by SIGHUP to answer")
                write_config(path, [entry("jev", upstream.url), entry("luna", upstream.url),
                                    entry("third", upstream.url)])
                async with httpx.AsyncClient(timeout=30) as client:
                    refused = await client.post(f"{gateway.url}/config/reload")
                    reloaded = await client.post(f"{gateway.url}/config/reload", headers=auth())
                    third = await client.post(f"{gateway.url}/v1/systemone", json=body("third"), headers=auth())
                await asyncio.sleep(0.5)
                load.stop()
                await running
                return load, reloaded, refused, third

            load, reloaded, refused, third = asyncio.run(scenario())
        finally:
            gateway.stop()
    assert refused.status_code == 401  # the master key only
    assert reloaded.status_code == 200 and third.status_code == 200
    summary = reloaded.json()
    assert summary["added"] == ["third"] and summary["removed"] == [] and summary["generation"] == 3
    assert summary["models"] == ["jev", "luna", "third"] and summary["restart_required"] == []
    assert len(load.statuses) > 30, "the load did not get going"
    assert load.failures == [] and set(load.statuses) == {200}


def test_a_request_in_flight_finishes_on_the_config_it_started_with(tmp_path):
    with SlowTypeSafe() as fast, SlowTypeSafe(delay=2.0) as slow:
        path = tmp_path / "gateway.yaml"
        write_config(path, [entry("jev", fast.url), entry("old", slow.url)])
        gateway = GatewayProcess.start(path, tmp_path)
        try:
            async def scenario() -> tuple[httpx.Response, httpx.Response, bool]:
                async with httpx.AsyncClient(timeout=30, headers=auth()) as client:
                    in_flight = asyncio.ensure_future(client.post(f"{gateway.url}/v1/systemone", json=body("old")))
                    while not slow.requests:
                        await asyncio.sleep(0.02)
                    write_config(path, [entry("jev", fast.url)])  # "old" is gone from the new config
                    reloaded = await client.post(f"{gateway.url}/config/reload")
                    still_running = not in_flight.done()
                    return await in_flight, reloaded, still_running

            old, reloaded, still_running = asyncio.run(scenario())
            assert reloaded.status_code == 200 and reloaded.json()["removed"] == ["old"]
            assert still_running, "the reload waited for the request in flight"
            assert old.status_code == 200 and old.headers["x-decisions-model"] == "typesafe/jev-latest"
            after = httpx.post(f"{gateway.url}/v1/systemone", json=body("old"), headers=auth(), timeout=30)
            assert after.status_code == 400 and "Unknown model 'old'" in after.json()["detail"]["message"]
        finally:
            gateway.stop()


def test_a_broken_config_keeps_the_running_one_and_the_error_names_the_entry(tmp_path):
    with SlowTypeSafe() as upstream:
        path = tmp_path / "gateway.yaml"
        write_config(path, [entry("jev", upstream.url)])
        gateway = GatewayProcess.start(path, tmp_path)
        try:
            broken = entry("luna", upstream.url)
            del broken["litellm_params"]["model"]
            write_config(path, [entry("jev", upstream.url), broken])
            refused = httpx.post(f"{gateway.url}/config/reload", headers=auth(), timeout=30)
            assert refused.status_code == 400
            error = refused.json()["error"]
            assert error["code"] == "invalid_config"
            assert "model_list[1] (luna).litellm_params.model: missing" in error["message"]
            assert "running config stays" in error["message"]
            assert answers(gateway.url, "jev") == 200 and answers(gateway.url, "luna") == 400

            write_config(path, [entry("jev", upstream.url), {"model_name": "luna", "litellm_params": {
                "model": "nosuch/jev", "api_key": KEY}}])
            gateway.signal(signal.SIGHUP)
            log = gateway.wait_for_log("config reload on SIGHUP failed")
            assert "model_list[1] (luna).litellm_params.model: " in log and "unknown provider 'nosuch'" in log
            assert answers(gateway.url, "jev") == 200
            ready = httpx.get(f"{gateway.url}/health/readiness", headers=auth(), timeout=10).json()
            assert ready["config"]["generation"] == 1 and "nosuch" in ready["config"]["last_reload_error"]

            write_config(path, [entry("jev", upstream.url), entry("luna", upstream.url)])  # fixed: it loads
            assert httpx.post(f"{gateway.url}/config/reload", headers=auth(), timeout=30).json()["added"] == ["luna"]
            assert answers(gateway.url, "luna") == 200
        finally:
            gateway.stop()
    assert KEY not in gateway.log() and MASTER not in gateway.log()


def test_a_reload_keeps_what_is_bound_at_start_and_says_a_restart_is_needed(tmp_path):
    with SlowTypeSafe() as upstream:
        path = tmp_path / "gateway.yaml"
        write_config(path, [entry("jev", upstream.url)])
        gateway = GatewayProcess.start(path, tmp_path)
        try:
            write_config(path, [entry("jev", upstream.url)], master_key="sk-another-master-key-000000000",
                         max_request_body_bytes=1000)
            summary = httpx.post(f"{gateway.url}/config/reload", headers=auth(), timeout=30).json()
            assert summary["restart_required"] == ["general_settings.master_key"]
            assert summary["changed"] == [] and summary["added"] == []
            assert answers(gateway.url, "jev") == 200  # the running master key still opens the gateway
            big = body(state="x" * 2000)
            too_big = httpx.post(f"{gateway.url}/v1/systemone", json=big, headers=auth(), timeout=30)
            assert too_big.status_code == 413  # a request limit is not bound at start: it took effect
        finally:
            gateway.stop()
    assert "sk-another-master-key" not in gateway.log()

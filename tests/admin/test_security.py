"""Hostile input and secrets: SQL injection strings in every filter, body field and the Authorization header
are answered with a 4xx or an empty result (never a 500, never a changed table); key material (virtual
keys, the master key, the salt) appears in no log line, in no response but the one that made the key,
and in no file but the salt file."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from gateway.auth.keys import SALT_FILE
from tests.admin.conftest import MASTER, AdminEnv
from tests.admin.test_keys_api import generate

INJECTIONS = [
    "' OR '1'='1", "'; DROP TABLE verification_tokens; --", '" OR 1=1 --', "1; SELECT pg_sleep(3)",
    "%' OR 1=1 --", "sk-' OR 1=1 --", "' UNION SELECT token, key_alias FROM verification_tokens --",
    "*", "%", "_", "\\", "0" * 64 + "' OR 'x'='x", "a" * 5000, "ü' OR 1=1 --", "\x00' OR 1=1",
    "2026-11-30' OR '1'='1",
]


def clean(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    assert response.status_code != 200 or not _rows(response.json()), response.text


def _rows(body: object) -> list:
    if isinstance(body, list):
        return body
    assert isinstance(body, dict)
    for name in ("data", "keys", "deleted_keys", "deleted_teams"):
        if name in body:
            return body[name]
    return [body]  # a record: a 200 here would be a match


async def test_injection_strings_in_every_filter_are_answered_cleanly(env: AdminEnv):
    admin = env.client()
    team_id = (await admin.post("/team/new", json={"team_id": "team-x"})).json()["team_id"]
    made = await generate(admin, key_alias="victim", team_id=team_id)
    for text in INJECTIONS:
        for path, name in (("/key/info", "key"), ("/key/list", "team_id"), ("/key/list", "key_alias"),
                           ("/team/info", "team_id"), ("/spend/logs", "api_key"), ("/spend/logs", "key_alias"),
                           ("/spend/logs", "team_id"), ("/spend/logs", "model"), ("/spend/logs", "request_id"),
                           ("/spend/logs", "start_date"), ("/spend/logs", "end_date"),
                           ("/global/spend/report", "api_key"), ("/global/spend/report", "team_id"),
                           ("/global/spend/report", "group_by"), ("/global/spend/report", "start_date"),
                           ("/key/list", "page"), ("/key/list", "size")):
            clean(await admin.get(path, params={name: text}))
        for path, body in (("/key/update", {"key": text, "rpm_limit": 1}), ("/key/block", {"key": text}),
                           ("/key/unblock", {"key": text}), ("/key/regenerate", {"key": text}),
                           ("/key/delete", {"keys": [text]}), ("/key/delete", {"key_aliases": [text]}),
                           ("/team/update", {"team_id": text}), ("/team/block", {"team_id": text}),
                           ("/team/delete", {"team_ids": [text]}), ("/key/generate", {"team_id": text}),
                           ("/key/generate", {"budget_duration": text}), ("/key/generate", {"models": [text]})):
            response = await admin.post(path, json=body)
            assert response.status_code < 500, (path, body, response.text)
            if path == "/key/generate" and response.status_code == 200:  # a model name may be any text
                await admin.post("/key/delete", json={"keys": [response.json()["token"]]})
            elif response.status_code == 200:
                assert _rows(response.json()) == [], (path, body, response.text)
    listed = (await admin.get("/key/list", params={"return_full_object": "true"})).json()
    assert [k["token"] for k in listed["keys"]] == [made["token"]] and listed["keys"][0]["blocked"] is False
    assert (await env.client(key=made["key"]).get("/key/info")).status_code == 200


async def test_injection_strings_in_the_authorization_header_are_401(env: AdminEnv):
    made = await generate(env.client(), key_alias="k")
    anonymous = env.client(key=None)
    for text in INJECTIONS:
        if "\x00" in text or not text.isascii():
            continue  # not a header value httpx will send
        for headers in ({"authorization": f"Bearer {text}"}, {"authorization": text}, {"x-api-key": text},
                        {"api-key": text}):
            response = await anonymous.get("/key/info", headers=headers)
            assert response.status_code == 401, (headers, response.text)
            assert text not in response.text or len(text) < 3
    assert (await env.client(key=made["key"]).get("/key/info")).status_code == 200


async def test_key_material_appears_only_in_the_answer_that_made_it(sqlite_env: AdminEnv, data_dir: Path,
                                                                  tmp_path: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG)  # every logger, SQLAlchemy's statements and parameters included
    sqlite_env.general_settings = {"master_key": MASTER}  # the salt comes from the data directory's file
    app = sqlite_env.app()
    admin = sqlite_env.client(app)
    answers: list[httpx.Response] = []
    made = await generate(admin, key_alias="secret", rpm_limit=3)
    regenerated = await admin.post("/key/regenerate", json={"key": made["key"]})
    new_key = regenerated.json()["key"]
    caller = sqlite_env.client(app, key=new_key)
    answers += [await caller.get("/key/info"), await admin.get("/key/info", params={"key": new_key}),
                await admin.get("/key/list", params={"return_full_object": "true"}),
                await admin.post("/key/update", json={"key": new_key, "key_alias": "still-secret"}),
                await admin.post("/key/block", json={"key": new_key}), await caller.get("/key/info"),
                await admin.post("/key/update", json={"key": new_key + " x"}),  # a validation error on the key
                await admin.post("/key/update", json={"key": made["key"], "rpm_limit": 1}),  # the old key: 404
                await sqlite_env.client(app, key=made["key"]).get("/key/info"),
                await sqlite_env.client(app, key=MASTER[:-1]).get("/key/list"),
                await admin.get("/spend/logs", params={"api_key": new_key}),
                await admin.post("/key/delete", json={"keys": [new_key]})]
    salt = (data_dir / SALT_FILE).read_bytes().strip().decode()
    secrets = {"virtual key": made["key"], "regenerated key": new_key, "master key": MASTER, "salt": salt}
    for what, secret in secrets.items():
        body = secret.removeprefix("sk-")
        for response in answers:
            assert body not in response.text and body not in str(response.headers), (what, response.text)
        for record in caplog.records:
            if record.name.startswith("httpx"):
                continue  # the test's own client logging the URLs it asked for (a key in ?api_key=)
            assert body not in record.getMessage() and body not in str(record.args), (what, record.getMessage())
        for path in tmp_path.rglob("*"):
            if path.is_file() and path.name != SALT_FILE:
                assert body.encode() not in path.read_bytes(), (what, path)
    # the statements and their parameters were logged (by aiosqlite), and checked
    assert any("verification_tokens" in r.getMessage() for r in caplog.records)

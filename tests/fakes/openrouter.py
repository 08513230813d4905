"""Fake OpenRouter alpha decisions (wire-formats.md 6.4): System One on ``POST /api/alpha/decisions``.

Bearer auth (401 ``{"error": {"code": 401, "message"}}``); ``-latest`` aliases only with the tilde
(``~typesafe/jev-latest``; without it 400); base64 ``assets`` (a ``part`` is refused); answers
rounded to 2 decimals, without ``confidence`` or ``legend`` (optional in OpenRouter's schema);
responses add ``id``, ``provider`` and ``usage.cost`` (1e-7 per input token) and
``usage.input_tokens_details.cached_tokens``.
"""

from __future__ import annotations

from typing import Any

from tests.fakes import answers
from tests.fakes.harness import Recorded, Scripted
from tests.fakes.systemone import BadRequest, SystemOneFake

PRICE_PER_TOKEN = 1e-7
ANSWERING = {"~typesafe/jev-latest": "typesafe/jev-1.14"}


class FakeOpenRouter(SystemOneFake):
    path = "/api/alpha/decisions"
    decimals = 2

    def __init__(self, api_key: str | None = "or-test-key") -> None:
        super().__init__(api_key)

    def error(self, status, message, code=None, headers=None, loc=None) -> Scripted:
        return Scripted.of_json(status, {"error": {"code": status, "message": message}}, headers)

    def check_auth(self, rec: Recorded) -> None:
        if rec.header("authorization") != f"Bearer {self.api_key}":
            raise BadRequest(401, "No auth credentials found")

    def validate(self, body: dict) -> None:
        model = body.get("model") or ""
        if model.endswith("-latest") and not model.startswith("~"):
            raise BadRequest(400, f"{model} is not a valid model ID")
        try:
            super().validate(body)
        except BadRequest as bad:
            raise BadRequest(400, bad.message) from None

    def check_images(self, body: dict, rec: Recorded) -> None:
        if "images" in body:
            raise BadRequest(400, "images is not a valid field")
        for ref, asset in (body.get("assets") or {}).items():
            if "part" in asset or "data_base64" not in asset:
                raise BadRequest(400, f"assets.{ref} needs data_base64")

    def answering_model(self, model: str | None) -> str:
        return ANSWERING.get(model or "", (model or "").lstrip("~"))

    def usage(self, rec: Recorded, body: dict) -> dict:
        tokens = answers.token_count(rec.body)
        return {"input_tokens": tokens, "output_tokens": 0, "input_tokens_details": {"cached_tokens": tokens // 4},
                "cost": round(tokens * PRICE_PER_TOKEN, 12)}

    def envelope(self, payload: dict, rec: Recorded) -> Scripted:
        for answer in payload["answers"].values():
            answer.pop("confidence", None)
            answer.pop("legend", None)
        return Scripted.of_json(200, {"id": f"gen-{len(self.requests)}", "provider": "TypeSafe", **payload})

    def expected_answers(self, rec: Recorded) -> dict[str, Any]:
        out = super().expected_answers(rec)
        for answer in out.values():
            answer.pop("confidence", None)
            answer.pop("legend", None)
        return out

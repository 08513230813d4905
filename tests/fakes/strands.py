"""Fake Strands Decider server (wire-formats.md 6.6): ``POST /v1/systemone``, ``GET /health``.

No authentication unless started with a key (as when it sits behind a proxy); score levels 2-10
and choices 2-255 (an engine ``ValueError`` -> 422 ``{"detail": "<message>"}``); schema errors as a
FastAPI 422 ``detail`` list; ``model`` is the checkpoint name whatever was asked; a top-level
``latency_ms``; probabilities rounded to 4 decimals.
"""

from __future__ import annotations

from tests.fakes.harness import Recorded, Scripted
from tests.fakes.systemone import BadRequest, SystemOneFake

CHECKPOINT = "strands-decider-E2B-gemma4-v2-2611"


class FakeStrands(SystemOneFake):
    auth_required = False

    def __init__(self, api_key: str | None = None) -> None:
        super().__init__(api_key)

    def check_auth(self, rec: Recorded) -> None:
        if self.api_key is not None and rec.header("authorization") != f"Bearer {self.api_key}":
            raise BadRequest(401, "Unauthorized")

    def handle(self, rec: Recorded) -> Scripted:
        if rec.method == "GET" and rec.path == "/health":
            return Scripted.of_json(200, {"status": "ok", "model": CHECKPOINT, "vision": False})
        return super().handle(rec)

    def error(self, status, message, code=None, headers=None, loc=None) -> Scripted:
        if status == 422 and code == "engine":
            return Scripted.of_json(422, {"detail": message}, headers)
        if status == 422:
            return super().error(status, message, code, headers, loc)
        return Scripted.of_json(status, {"detail": message}, headers)

    def validate(self, body: dict) -> None:
        super().validate(body)
        for qid, q in body["questions"].items():
            if q["type"] == "score" and not 2 <= len(q["criteria"]) <= 10:
                raise BadRequest(422, f"question {qid}: score questions take 2 to 10 levels", "engine")
            if q["type"] == "choice" and not 2 <= len(q["criteria"]) <= 255:
                raise BadRequest(422, f"question {qid}: choice questions take 2 to 255 options", "engine")

    def answering_model(self, model: str | None) -> str:
        return CHECKPOINT

    def envelope(self, payload: dict, rec: Recorded) -> Scripted:
        return Scripted.of_json(200, {**payload, "latency_ms": 12.5})

"""Fake self-hosted decision servers: Laya (``laya-serve``) and Bespoke Nimble (wire-formats.md 6.7, 6.8).

Laya: ``POST /v1/systemone``; Bearer auth only when started with a key; answers carry Laya's
extensions (root ``routing``; per answer ``answer_confidence`` = p_max, ``action``,
``x_jev_confidence`` = the Jev value, and an entropy ``confidence`` (noul answers too); usage adds
``truncated``, ``truncated_questions``); ``model`` is the head name ``laya-rl-agent``; FastAPI
``detail`` errors (413 over 256 questions, 503 when busy).

Nimble: ``POST /v1/systemone``, ``GET /v1/limits``; at most 64 questions, 2-26 options and levels
(422); entropy-concentration confidence; answers rounded to 4 decimals.
"""

from __future__ import annotations

import math

from tests.fakes.harness import Recorded, Scripted
from tests.fakes.systemone import BadRequest, SystemOneFake

LAYA_HEAD = "laya-rl-agent"


def entropy_confidence(p: list[float]) -> float:
    """Laya's and Nimble's confidence: 1 - H(p) / ln k."""
    k = len(p)
    if k <= 1:
        return 1.0
    total = sum(p) or 1.0
    h = -sum((x / total) * math.log(x / total) for x in p if x > 0)
    return round(max(0.0, 1 - h / math.log(k)), 4)


class _OptionalAuth(SystemOneFake):
    auth_required = False

    def __init__(self, api_key: str | None = None) -> None:
        super().__init__(api_key)

    def check_auth(self, rec: Recorded) -> None:
        if self.api_key is not None and rec.header("authorization") != f"Bearer {self.api_key}":
            raise BadRequest(401, "Invalid or missing bearer token")

    def error(self, status, message, code=None, headers=None, loc=None) -> Scripted:
        if status == 422:
            return super().error(status, message, code, headers, loc)
        return Scripted.of_json(status, {"detail": message}, headers)


class FakeLaya(_OptionalAuth):
    max_questions = 256

    def validate(self, body: dict) -> None:
        try:
            super().validate(body)
        except BadRequest as bad:
            raise BadRequest(413 if bad.code == "too_many_questions" else bad.status, bad.message, bad.code,
                             bad.loc) from None

    def answering_model(self, model: str | None) -> str:
        return LAYA_HEAD

    def envelope(self, payload: dict, rec: Recorded) -> Scripted:
        for answer in payload["answers"].values():
            if answer["type"] == "noul":
                p = [answer["noul"], 1 - answer["noul"]]
            elif answer["type"] in ("choice", "score"):
                p = list(answer["probabilities"].values())
                answer["x_jev_confidence"] = answer["confidence"]
            else:
                continue
            answer["confidence"] = entropy_confidence(p)
            answer["answer_confidence"] = max(p)
            answer["action"] = {"act_probability": max(p)}
        payload["routing"] = {"head": LAYA_HEAD, "task": "auto"}
        payload["usage"].update({"truncated": False, "truncated_questions": []})
        return Scripted.of_json(200, payload)


class FakeNimble(_OptionalAuth):
    max_questions = 64

    def handle(self, rec: Recorded) -> Scripted:
        if rec.method == "GET" and rec.path == "/v1/limits":
            return Scripted.of_json(200, {
                "max_answers_per_question": 26, "max_questions": 64, "max_prompt_tokens": 8192,
                "trained_prompt_tokens": 2048, "max_input_tokens": 8192, "max_body_bytes": 1048576,
                "max_total_input_tokens": 65536, "max_concurrent_requests": 4})
        return super().handle(rec)

    def validate(self, body: dict) -> None:
        try:
            super().validate(body)
        except BadRequest as bad:
            raise BadRequest(422, bad.message, bad.code, bad.loc) from None
        for qid, q in body["questions"].items():
            if q["type"] in ("choice", "score") and not 2 <= len(q["criteria"]) <= 26:
                raise BadRequest(422, "between 2 and 26 answers are allowed", "too_long",
                                 ["body", "questions", qid, "criteria"])

    def answering_model(self, model: str | None) -> str:
        return model or "nimble-latest"

    def envelope(self, payload: dict, rec: Recorded) -> Scripted:
        for answer in payload["answers"].values():
            if answer["type"] in ("choice", "score"):
                answer["confidence"] = entropy_confidence(list(answer["probabilities"].values()))
        return Scripted.of_json(200, payload, {"x-request-id": f"nimble-{len(self.requests)}"})

"""The shared fake of a System One upstream; each provider's fake sets its path, auth, envelope, limits.

Default behaviour (TypeSafe-like): ``POST {path}`` with ``Authorization: Bearer <api_key>`` (403
without it, 401 with a wrong key), JSON or multipart bodies, FastAPI ``detail`` errors (422 with a
``detail`` list for schema errors), answers from tests/fakes/answers.py rounded to ``decimals``.
"""

from __future__ import annotations

from typing import Any

from tests.fakes import answers
from tests.fakes.harness import FakeServer, Recorded, Scripted

QUESTION_TYPES = ("noul", "choice", "score", "box")


class BadRequest(Exception):
    def __init__(self, status: int, message: str, code: Any = None, loc: list | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.loc = status, message, code, loc


class SystemOneFake(FakeServer):
    path = "/v1/systemone"
    decimals = 4
    max_questions: int | None = None
    auth_required = True
    box_supported = False

    def __init__(self, api_key: str | None = "test-key") -> None:
        super().__init__()
        self.api_key = api_key

    # ---- hooks -----------------------------------------------------------------------------

    def error(self, status: int, message: str, code: Any = None, headers: dict | None = None,
              loc: list | None = None) -> Scripted:
        """The upstream's error envelope (FastAPI style by default)."""
        if status == 422:
            detail = [{"loc": loc or ["body"], "msg": message, "type": code or "value_error"}]
            return Scripted.of_json(422, {"detail": detail}, headers)
        return Scripted.of_json(status, {"detail": {"message": message, "error_type": code or "unknown"}}, headers)

    def check_auth(self, rec: Recorded) -> None:
        if not self.auth_required and self.api_key is None:
            return
        auth = rec.header("authorization")
        if auth is None:
            raise BadRequest(403, "Not authenticated", "authentication_error")
        if auth != f"Bearer {self.api_key}":
            raise BadRequest(401, "Invalid API key", "authentication_error")

    def read_body(self, rec: Recorded) -> dict:
        if rec.json is None or not isinstance(rec.json, dict):
            raise BadRequest(400, "The body is not a JSON object", "invalid_json")
        return rec.json

    def check_images(self, body: dict, rec: Recorded) -> None:
        if body.get("assets") or body.get("images"):
            raise BadRequest(422, "Extra inputs are not permitted", "extra_forbidden", ["body", "assets"])

    def answering_model(self, model: str | None) -> str:
        return model or "default"

    def usage(self, rec: Recorded, body: dict) -> dict:
        return {"input_tokens": answers.token_count(rec.body), "output_tokens": 0}

    def answer_state(self, body: dict) -> Any:
        """The state the answers are seeded from (a fake that moves images around restores it here)."""
        return body.get("state")

    def envelope(self, payload: dict, rec: Recorded) -> Scripted:
        return Scripted.of_json(200, payload, {"x-typesafe-request-id": f"req-{len(self.requests)}"})

    # ---- the shared behaviour --------------------------------------------------------------

    def fail_next(self, status: int, message: str = "upstream failure", *, code: Any = None,
                  headers: dict | None = None) -> None:
        """Answer the next request with this error in the upstream's own envelope."""
        scripted = self.error(status, message, code, headers)
        self.queue(scripted.status, body=scripted.body, headers=scripted.headers)

    def validate(self, body: dict) -> None:
        if "state" not in body or body["state"] is None:
            raise BadRequest(422, "Field required", "missing", ["body", "state"])
        questions = body.get("questions")
        if not isinstance(questions, dict) or not questions:
            raise BadRequest(422, "questions must be a non-empty object", "too_short", ["body", "questions"])
        if self.max_questions is not None and len(questions) > self.max_questions:
            raise BadRequest(400, f"At most {self.max_questions} questions are allowed, got {len(questions)}",
                             "too_many_questions", ["body", "questions"])
        for qid, q in questions.items():
            kind = q.get("type") if isinstance(q, dict) else None
            if kind not in QUESTION_TYPES:
                raise BadRequest(422, f"Input tag '{kind}' found using 'type' does not match any of the expected "
                                      f"tags", "union_tag_invalid", ["body", "questions", qid])
            if kind == "choice" and (not isinstance(q.get("criteria"), dict) or not q["criteria"]):
                raise BadRequest(422, "criteria must be a non-empty object", "too_short",
                                 ["body", "questions", qid, "choice", "criteria"])
            if kind == "score" and (not isinstance(q.get("criteria"), list) or not q["criteria"]):
                raise BadRequest(422, "criteria must be a non-empty list", "too_short",
                                 ["body", "questions", qid, "score", "criteria"])
            if kind == "box" and not self.box_supported:
                raise BadRequest(400, "box questions are not supported", "unsupported_question_type")

    def handle(self, rec: Recorded) -> Scripted:
        if rec.method != "POST" or rec.path != self.path:
            return self.error(404, f"No route {rec.method} {rec.path}", "not_found")
        try:
            self.check_auth(rec)
            body = self.read_body(rec)
        except BadRequest as bad:
            return self.error(bad.status, bad.message, bad.code, loc=bad.loc)
        return self.handle_checked(rec, body)

    def handle_checked(self, rec: Recorded, body: dict) -> Scripted:
        try:
            self.validate(body)
            self.check_images(body, rec)
        except BadRequest as bad:
            return self.error(bad.status, bad.message, bad.code, loc=bad.loc)
        return self.answer_all(rec, body)

    def answer_all(self, rec: Recorded, body: dict) -> Scripted:
        payload = {"model": self.answering_model(body.get("model")), "answers": self.expected_from(body),
                   "usage": self.usage(rec, body)}
        return self.envelope(payload, rec)

    def expected_from(self, body: dict) -> dict:
        state = self.answer_state(body)
        return {qid: {"type": "refusal"} if answers.refuses(q) else answers.systemone_answer(state, qid, q, self.decimals)
                for qid, q in body["questions"].items()}

    def expected_answers(self, rec: Recorded) -> dict:
        """What this fake answered (or would answer) to a recorded request."""
        return self.expected_from(self.read_body(rec))


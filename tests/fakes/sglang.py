"""Fake SGLang-style ``/v1/decisions`` server (backend-reference.md 3.1; SGLang, MAX, the bundled backend).

``POST /v1/decisions``; Bearer auth only when started with a key (401 otherwise); strict request
schema (unknown fields, blank ids or question text, repeated ids -> 400); 2-26 options, 2-10
levels; ``prompt_format_version`` other than 1 -> 400; images -> 400 (a text model); at most 64
questions (MAX's limit); answers keyed by question id with unrounded ``probabilities`` (``yes``/``no``,
option names, level indices), ``label_mass``, ``choice`` / ``score``; usage ``{prompt_tokens,
total_tokens}`` (no ``completion_tokens``); errors as ``{"object": "error", "message", "type", "param",
"code"}``.
"""

from __future__ import annotations

from typing import Any

from tests.fakes import answers
from tests.fakes.harness import FakeServer, Recorded, Scripted

TOP_LEVEL = {"input", "images", "questions", "temperature", "chat_template_kwargs", "prompt_format_version",
             "return_prompt_token_ids", "model"}
QUESTION_FIELDS = {"yes_no": {"id", "type", "question", "yes", "no"},
                   "choice": {"id", "type", "question", "options"},
                   "score": {"id", "type", "question", "levels"}}
LABEL_MASS = 0.62


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class FakeSGLang(FakeServer):
    path = "/v1/decisions"
    max_questions = 64

    def __init__(self, api_key: str | None = None) -> None:
        super().__init__()
        self.api_key = api_key

    def error(self, status: int, message: str, headers: dict | None = None) -> Scripted:
        kind = {400: "BadRequest", 401: "Unauthorized", 404: "NotFound", 429: "TooManyRequests"}.get(
            status, "InternalServerError")
        return Scripted.of_json(status, {"object": "error", "message": message, "type": kind, "param": None,
                                         "code": status}, headers)

    def fail_next(self, status: int, message: str = "upstream failure", *, code: Any = None,
                  headers: dict | None = None) -> None:
        scripted = self.error(status, message, headers)
        self.queue(scripted.status, body=scripted.body, headers=scripted.headers)

    def handle(self, rec: Recorded) -> Scripted:
        if rec.method != "POST" or rec.path != self.path:
            return self.error(404, f"Not Found: {rec.method} {rec.path}")
        try:
            if self.api_key is not None and rec.header("authorization") != f"Bearer {self.api_key}":
                raise Refused(401, "Unauthorized")
            body = rec.json
            if not isinstance(body, dict):
                raise Refused(400, "the body is not a JSON object")
            self.validate(body)
        except Refused as bad:
            return self.error(bad.status, bad.message)
        usage = {"prompt_tokens": answers.token_count(rec.body), "total_tokens": answers.token_count(rec.body)}
        return Scripted.of_json(200, {"object": "decisions", "model": body.get("model"), "prompt_format_version": 1,
                                      "answers": self.expected_from(body), "usage": usage})

    def validate(self, body: dict) -> None:
        unknown = set(body) - TOP_LEVEL
        if unknown:
            raise Refused(400, f"{', '.join(sorted(unknown))}: Extra inputs are not permitted")
        if body.get("images"):
            raise Refused(400, "/v1/decisions images require a model served with multimodal input")
        version = body.get("prompt_format_version")
        if version is not None and version != 1:
            raise Refused(400, f"prompt_format_version {version} is not served, this server uses version 1")
        questions = body.get("questions")
        if not isinstance(questions, list) or not questions:
            raise Refused(400, "questions: List should have at least 1 item")
        if len(questions) > self.max_questions:
            raise Refused(400, f"questions: at most {self.max_questions} questions are allowed")
        seen = set()
        for i, q in enumerate(questions):
            kind = q.get("type") if isinstance(q, dict) else None
            if kind not in QUESTION_FIELDS:
                raise Refused(400, f"questions[{i}]: Input tag '{kind}' does not match any of the expected tags")
            if set(q) - QUESTION_FIELDS[kind]:
                raise Refused(400, f"questions[{i}]: Extra inputs are not permitted")
            if not str(q.get("id", "")).strip() or not q.get("question"):
                raise Refused(400, f"questions[{i}]: id and question must not be blank")
            if q["id"] in seen:
                raise Refused(400, f"question id '{q['id']}' repeats another question")
            seen.add(q["id"])
            if kind == "choice" and not 2 <= len(q.get("options") or []) <= 26:
                raise Refused(400, f"questions[{i}].options: between 2 and 26 options are allowed")
            if kind == "score" and not 2 <= len(q.get("levels") or []) <= 10:
                raise Refused(400, f"questions[{i}].levels: between 2 and 10 levels are allowed")

    def expected_from(self, body: dict) -> dict:
        out = {}
        for q in body["questions"]:
            seed = answers.seed_for(body["input"], q["id"], q)
            if q["type"] == "yes_no":
                names = ["yes", "no"]
            elif q["type"] == "choice":
                names = [o["name"] for o in q["options"]]
            else:
                names = [str(i) for i in range(len(q["levels"]))]
            p = answers.raw_probabilities(seed, len(names))
            answer: dict[str, Any] = {"type": q["type"], "probabilities": dict(zip(names, p)), "label_mass": LABEL_MASS}
            if q["type"] == "choice":
                answer["choice"] = names[max(range(len(p)), key=lambda i: (p[i], -i))]
            elif q["type"] == "score":
                answer["score"] = sum(i * x for i, x in enumerate(p))
            out[q["id"]] = answer
        return out

    def expected_answers(self, rec: Recorded) -> dict:
        return self.expected_from(rec.json)

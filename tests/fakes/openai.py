"""Fake OpenAI Decisions: ``POST /v1/decisions`` (wire-formats.md sections 4 and 6.1).

401 without or with a wrong ``Authorization`` (its message repeats the key it was given, so a test
can check the gateway never passes a key on); 404 for a model other than ``gpt-6-luna``; 400 with
``param`` for invalid questions (1-400 questions, 2-255 unique choices, instructions required,
``input_image`` URLs that are neither data URLs nor http(s)); answers rounded to 2 decimals, in
question order with ``name`` echoed; a ``refusal`` for instructions containing ``REFUSE``;
``usage`` with ``input_tokens_details`` (half the input counted as cached when a
``prompt_cache_key`` is sent); ``x-request-id`` on every answer.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes import answers
from tests.fakes.harness import FakeServer, Recorded, Scripted

MODELS = ("gpt-6-luna",)


class Invalid(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 type: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = status, message, param, code, type


class FakeOpenAI(FakeServer):
    path = "/v1/decisions"
    decimals = 2

    def __init__(self, api_key: str = "sk-test-openai") -> None:
        super().__init__()
        self.api_key = api_key

    def error(self, status: int, message: str, param: str | None = None, code: str | None = None,
              type: str = "invalid_request_error", headers: dict | None = None) -> Scripted:
        body = {"error": {"message": message, "type": type, "param": param, "code": code}}
        return Scripted.of_json(status, body, {"x-request-id": f"req_{len(self.requests)}", **(headers or {})})

    def fail_next(self, status: int, message: str = "upstream failure", *, code: str | None = None,
                  headers: dict | None = None, type: str = "server_error") -> None:
        scripted = self.error(status, message, None, code, type, headers)
        self.queue(scripted.status, body=scripted.body, headers=scripted.headers)

    def handle(self, rec: Recorded) -> Scripted:
        if rec.method != "POST" or rec.path != self.path:
            return self.error(404, f"Invalid URL ({rec.method} {rec.path})", type="invalid_request_error")
        try:
            self.check_auth(rec)
            body = rec.json
            if not isinstance(body, dict):
                raise Invalid(400, "We could not parse the JSON body of your request.")
            self.validate(body)
        except Invalid as bad:
            return self.error(bad.status, bad.message, bad.param, bad.code, bad.type)
        out = [self.answer(body["input"], i, q) for i, q in enumerate(body["questions"])]
        return Scripted.of_json(200, {"model": body["model"], "answers": out, "usage": self.usage(rec, body)},
                                {"x-request-id": f"req_{len(self.requests)}"})

    def check_auth(self, rec: Recorded) -> None:
        auth = rec.header("authorization")
        if auth is None:
            raise Invalid(401, "You didn't provide an API key.", type="invalid_request_error")
        if auth != f"Bearer {self.api_key}":
            raise Invalid(401, f"Incorrect API key provided: {auth.removeprefix('Bearer ')}.",
                          code="invalid_api_key")

    def validate(self, body: dict) -> None:
        if body.get("model") not in MODELS:
            raise Invalid(404, f"The model `{body.get('model')}` does not exist or you do not have access to it.",
                          code="model_not_found")
        if "input" not in body:
            raise Invalid(400, "Missing required parameter: 'input'.", "input", "missing_required_parameter")
        if isinstance(body["input"], list):
            for m, item in enumerate(body["input"]):
                for p, part in enumerate(item.get("content") if isinstance(item.get("content"), list) else []):
                    url = part.get("image_url") if part.get("type") == "input_image" else None
                    if url is not None and not url.startswith(("data:image/", "http://", "https://")):
                        raise Invalid(400, "Invalid image_url.", f"input[{m}].content[{p}].image_url")
        questions = body.get("questions")
        if not isinstance(questions, list) or not 1 <= len(questions) <= 400:
            raise Invalid(400, "questions must hold between 1 and 400 questions.", "questions")
        for i, q in enumerate(questions):
            if q.get("type") not in ("predicate", "choice", "score"):
                raise Invalid(400, f"Invalid value: '{q.get('type')}'.", f"questions[{i}].type", "invalid_value")
            if not q.get("instructions"):
                raise Invalid(400, "Missing required parameter.", f"questions[{i}].instructions")
            if q["type"] == "choice":
                values = [c.get("value") for c in q.get("choices") or []]
                if not 2 <= len(values) <= 255:
                    raise Invalid(400, "Provide between 2 and 255 choices.", f"questions[{i}].choices")
                if len({json.dumps(v) for v in values}) != len(values):
                    raise Invalid(400, "Each choice must be unique.", f"questions[{i}].choices")
            if q["type"] == "score" and len(q.get("levels") or []) < 2:
                raise Invalid(400, "Provide at least 2 levels.", f"questions[{i}].levels")

    def answer(self, input_: Any, index: int, q: dict) -> dict:
        name = q.get("name")
        if answers.refuses(q):
            return {"type": "refusal", "name": name}
        seed = answers.seed_for(input_, str(index), q)
        if q["type"] == "predicate":
            return {"type": "predicate", "name": name, "probability": answers.yes_probability(seed, self.decimals)}
        if q["type"] == "choice":
            values = [c["value"] for c in q["choices"]]
            p = answers.rounded(answers.raw_probabilities(seed, len(values)), self.decimals)
            best = max(range(len(p)), key=lambda i: (p[i], -i))
            return {"type": "choice", "name": name, "choice": values[best],
                    "confidence": round(answers.jev_choice_confidence(p), self.decimals),
                    "probabilities": [{"value": v, "probability": x} for v, x in zip(values, p)]}
        labels = [lv["label"] for lv in q["levels"]]
        p = answers.rounded(answers.raw_probabilities(seed, len(labels)), self.decimals)
        total = sum(p) or 1.0
        return {"type": "score", "name": name, "score": round(sum(i * x / total for i, x in enumerate(p)), 4),
                "confidence": round(answers.jev_score_confidence(p), self.decimals),
                "probabilities": [{"value": i, "label": lab, "probability": x}
                                  for i, (lab, x) in enumerate(zip(labels, p))]}

    def usage(self, rec: Recorded, body: dict) -> dict:
        tokens = answers.token_count(rec.body)
        cached = tokens // 2 if body.get("prompt_cache_key") else 0
        return {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens}

    def expected_answers(self, rec: Recorded) -> list[dict]:
        body = rec.json
        return [self.answer(body["input"], i, q) for i, q in enumerate(body["questions"])]

"""Fake Perplexity decisions (wire-formats.md 6.3): a System One body on ``POST /v1/decisions``.

Bearer auth (401 otherwise); the model must be a known ``pplx-decider-*`` (400 otherwise); 1-128
questions (129 -> 400); 1-10 levels, 1-255 options; images only as ``image_url`` parts with
base64 data URLs inside a ``state`` array (at most 8; http(s) URLs and unknown top-level fields
refused); probabilities rounded to 2 decimals; errors as ``{"error": {message, type, code}}``.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.harness import Recorded, Scripted
from tests.fakes.systemone import BadRequest, SystemOneFake

MODELS = ("pplx-decider-v1-27b", "pplx-decider-v1.1-27b", "pplx-decider-v1.2", "pplx-decider-v1.3")
TOP_LEVEL_FIELDS = {"model", "state", "questions"}


class FakePerplexity(SystemOneFake):
    path = "/v1/decisions"
    decimals = 2
    max_questions = 128

    def __init__(self, api_key: str | None = "pplx-test-key") -> None:
        super().__init__(api_key)

    def error(self, status, message, code=None, headers=None, loc=None) -> Scripted:
        body = {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
                          "code": status if code is None else code}}
        return Scripted.of_json(status, body, headers)

    def fail_next(self, status: int, message: str = "upstream failure", *, code: Any = None,
                  headers: dict | None = None) -> None:
        if status == 429 and headers is None:
            headers = {"Retry-After": "1"}  # Perplexity's measured rate-limit answer
        super().fail_next(status, message, code=code, headers=headers)

    def check_auth(self, rec: Recorded) -> None:
        if rec.header("authorization") != f"Bearer {self.api_key}":
            raise BadRequest(401, "Invalid API key", 401)

    def validate(self, body: dict) -> None:
        unknown = set(body) - TOP_LEVEL_FIELDS
        if unknown:
            raise BadRequest(400, f"Unknown fields: {', '.join(sorted(unknown))}", "invalid_request")
        if body.get("model") not in MODELS:
            raise BadRequest(400, f"Invalid model '{body.get('model')}'", "invalid_model")
        try:
            super().validate(body)
        except BadRequest as bad:
            raise BadRequest(400, bad.message, bad.code) from None
        for qid, q in body["questions"].items():
            if q["type"] == "score" and len(q["criteria"]) > 10:
                raise BadRequest(400, f"Question '{qid}' has more than 10 levels", "invalid_request")
            if q["type"] == "choice" and len(q["criteria"]) > 255:
                raise BadRequest(400, f"Question '{qid}' has more than 255 options", "invalid_request")

    def check_images(self, body: dict, rec: Recorded) -> None:
        state = body.get("state")
        if not isinstance(state, list):
            return
        images = [p for p in state if isinstance(p, dict) and p.get("type") == "image_url"]
        if len(images) > 8:
            raise BadRequest(400, "At most 8 images are allowed", "invalid_request")
        for part in images:
            url = (part.get("image_url") or {}).get("url", "")
            if not url.startswith("data:image/"):
                raise BadRequest(400, "Images must be base64 data URLs", "invalid_request")

"""Fake Cloudflare Workers AI Clef (wire-formats.md 6.5).

``POST /client/v4/accounts/{account}/ai/run/@cf/cloudflare/{clef|clef-flash}``; Bearer auth
(401 / code 10000); the body ``model`` must equal the last path segment (400 / 7000); 1-64
questions (65 -> 422 / 5012); 2-10 levels and 2-255 options (422 / 5012); at most 4 ``images``
data URLs (422 / 5012); probabilities rounded to 4 decimals; answers inside
``{"result": ..., "success": true, "errors": [], "messages": []}``; errors as
``{"success": false, "errors": [{"code", "message"}]}``; ``cf-ai-req-id`` header.
"""

from __future__ import annotations

import re

from tests.fakes.harness import Recorded, Scripted
from tests.fakes.systemone import BadRequest, SystemOneFake

ROUTE = re.compile(r"^/client/v4/accounts/(?P<account>[^/]+)/ai/run/@cf/cloudflare/(?P<model>clef|clef-flash)$")
STATUS_CODES = {400: 5006, 401: 10000, 413: 5021, 422: 5012, 429: 3040, 500: 5012, 529: 5012}


class FakeCloudflare(SystemOneFake):
    decimals = 4
    max_questions = 64

    def __init__(self, api_key: str | None = "cf-test-token", account: str = "acc123") -> None:
        super().__init__(api_key)
        self.account = account

    def base(self) -> str:
        return f"{self.url}/client/v4/accounts/{self.account}/ai/run"

    def error(self, status, message, code=None, headers=None, loc=None) -> Scripted:
        code = code if isinstance(code, int) else STATUS_CODES.get(status, 5012)
        return Scripted.of_json(status, {"success": False, "errors": [{"code": code, "message": message}],
                                         "messages": [], "result": None}, headers)

    def handle(self, rec: Recorded) -> Scripted:
        match = ROUTE.match(rec.path)
        if rec.method != "POST" or not match or match["account"] != self.account:
            return self.error(400, "No route for that URI", 7000)
        try:
            self.check_auth(rec)
        except BadRequest:
            return self.error(401, "Authentication error", 10000)
        body = rec.json
        if not isinstance(body, dict):
            return self.error(400, "Invalid JSON", 6003)
        if "model" in body and body["model"] != match["model"]:
            return self.error(400, f"model {body['model']!r} does not match the path", 7000)
        return self.handle_checked(rec, body)

    def validate(self, body: dict) -> None:
        try:
            super().validate(body)
        except BadRequest as bad:
            raise BadRequest(422, bad.message) from None
        for qid, q in body["questions"].items():
            if q["type"] == "score" and not 2 <= len(q["criteria"]) <= 10:
                raise BadRequest(422, f"questions.{qid}: a score takes 2 to 10 levels")
            if q["type"] == "choice" and not 2 <= len(q["criteria"]) <= 255:
                raise BadRequest(422, f"questions.{qid}: a choice takes 2 to 255 options")

    def check_images(self, body: dict, rec: Recorded) -> None:
        images = body.get("images") or []
        if "assets" in body:
            raise BadRequest(422, "Unknown field: assets")
        if len(images) > 4:
            raise BadRequest(422, "At most 4 images are allowed")
        if any(not isinstance(i, str) or not i.startswith("data:image/") for i in images):
            raise BadRequest(422, "images must be data URLs")

    def envelope(self, payload: dict, rec: Recorded) -> Scripted:
        return Scripted.of_json(200, {"result": payload, "success": True, "errors": [], "messages": []},
                                {"cf-ai-req-id": f"cf-{len(self.requests)}"})

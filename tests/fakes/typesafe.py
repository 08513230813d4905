"""Fake TypeSafe (api.typesafe.ai): ``POST /v1/systemone``, ``GET /v1/models``.

As wire-formats.md sections 1 and 6.2 document: 403 without ``Authorization``, 401 with a bad key;
JSON or multipart bodies (``request`` part + asset parts); ``assets`` and ``box`` questions only
with ``TypeSafe-Danger-Zone-Images: true``; an asset must be mentioned in the state; png/jpg/jpeg
only; more than 65,536 tokens without ``TypeSafe-Danger-Zone-Long-Context: true`` -> 400
``max_tokens_exceeded``; probabilities rounded to 2 decimals; ``jev-latest`` answered by the dated
``jev-1.13-20260917``; ``x-typesafe-request-id`` on every answer; FastAPI ``detail`` errors.
"""

from __future__ import annotations

import base64
import binascii
import json
from email.parser import BytesParser
from email.policy import HTTP

from tests.fakes import answers
from tests.fakes.harness import Recorded, Scripted
from tests.fakes.systemone import BadRequest, SystemOneFake

DATED_MODELS = {"jev-latest": "jev-1.13-20260917", "jev-preview": "jev-1.14-20261101"}
MAX_TOKENS = 65_536


def parse_multipart(rec: Recorded) -> dict[str, tuple[str, bytes]]:
    """name -> (content type, bytes) of a multipart/form-data body."""
    head = f"Content-Type: {rec.header('content-type')}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + rec.body)
    parts = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        parts[name] = (part.get_content_type(), part.get_payload(decode=True) or b"")
    return parts


class FakeTypeSafe(SystemOneFake):
    decimals = 2
    box_supported = True

    def __init__(self, api_key: str | None = "ts-test-key") -> None:
        super().__init__(api_key)
        self.parts: dict[str, tuple[str, bytes]] = {}

    def handle(self, rec: Recorded) -> Scripted:
        if rec.method == "GET" and rec.path == "/v1/models":
            try:
                self.check_auth(rec)
            except BadRequest as bad:
                return self.error(bad.status, bad.message, bad.code)
            return Scripted.of_json(200, {"models": [
                {"name": "jev-latest", "description": "General-purpose system one model.", "release_date": "2026-09-15"}]})
        return super().handle(rec)

    def read_body(self, rec: Recorded) -> dict:
        if (rec.header("content-type") or "").startswith("multipart/form-data"):
            self.parts = parse_multipart(rec)
            if "request" not in self.parts:
                raise BadRequest(422, "multipart body without a 'request' part", "missing", ["body", "request"])
            return json.loads(self.parts["request"][1])
        return super().read_body(rec)

    def _gate(self, rec: Recorded, name: str) -> bool:
        return (rec.header(f"typesafe-danger-zone-{name}") or "").lower() == "true"

    def check_images(self, body: dict, rec: Recorded) -> None:
        has_box = any(isinstance(q, dict) and q.get("type") == "box" for q in body["questions"].values())
        if (body.get("assets") or has_box) and not self._gate(rec, "images"):
            raise BadRequest(400, "Images and box questions need the TypeSafe-Danger-Zone-Images: true header",
                             "danger_zone_required")
        if "images" in body:
            raise BadRequest(422, "Extra inputs are not permitted", "extra_forbidden", ["body", "images"])
        state_text = json.dumps(body.get("state"))
        for ref, asset in (body.get("assets") or {}).items():
            if ref not in state_text:
                raise BadRequest(422, f"Asset {ref} is not referenced in the state", "value_error",
                                 ["body", "assets", ref])
            if "part" in asset:
                if asset["part"] not in self.parts:
                    raise BadRequest(422, f"Asset part {asset['part']} is missing", "missing", ["body", "assets", ref])
                continue
            if asset.get("format") not in ("png", "jpg", "jpeg"):
                raise BadRequest(422, "format must be png, jpg or jpeg", "enum", ["body", "assets", ref, "format"])
            try:
                base64.b64decode(asset.get("data_base64", ""), validate=True)
            except (binascii.Error, ValueError):
                raise BadRequest(422, "data_base64 is not base64", "value_error",
                                 ["body", "assets", ref, "data_base64"]) from None
        if answers.token_count(rec.body) > MAX_TOKENS and not self._gate(rec, "long-context"):
            raise BadRequest(400, "", "max_tokens_exceeded")

    def error(self, status, message, code=None, headers=None, loc=None) -> Scripted:
        if code == "max_tokens_exceeded":  # TypeSafe's token refusal carries no message
            return Scripted.of_json(status, {"detail": {"error_type": "max_tokens_exceeded"}}, headers)
        return super().error(status, message, code, headers, loc)

    def answering_model(self, model: str | None) -> str:
        model = model or "jev-latest"
        return DATED_MODELS.get(model, model)

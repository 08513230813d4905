"""The backend's refusals: a status, a message that names the question, and the SGLang error envelope."""

from __future__ import annotations


class BackendRefusal(Exception):
    """A request this server will not answer (400 unless said otherwise)."""

    def __init__(self, message: str, status: int = 400, headers: dict[str, str] | None = None,
                 payload: dict | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.headers = headers or {}
        self.payload = payload  # a complete error body in another envelope (System One's 422 ``detail`` list)

    def for_question(self, question_id: str) -> BackendRefusal:
        return BackendRefusal(f"question '{question_id}': {self.message}", self.status, self.headers, self.payload)


class EngineBusy(BackendRefusal):
    """The scoring queue is full: 503 with Retry-After."""

    def __init__(self, retry_after_s: int = 1):
        super().__init__("the decision backend is busy, retry shortly", status=503,
                         headers={"Retry-After": str(retry_after_s)})


def error_body(err: BackendRefusal) -> dict:
    """SGLang's error envelope: ``{"object": "error", "message", "type", "param", "code"}``."""
    if err.payload is not None:
        return err.payload
    kind = {400: "BadRequest", 503: "ServiceUnavailable"}.get(err.status, "InternalServerError")
    return {"object": "error", "message": err.message, "type": kind, "param": None, "code": err.status}

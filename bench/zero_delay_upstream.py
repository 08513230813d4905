"""The zero-delay upstream of bench/gateway.py, in its own process: TypeSafe's ``/v1/systemone`` and
OpenAI's ``/v1/decisions`` answering every question asked with a precomputed valid answer, and
``GET /calls``: how many decision calls it has answered, those that carried ``UPSTREAM_KEY`` (a gateway's)
apart from the others (a benchmark of cache hits checks how many reached it).

    python -m bench.zero_delay_upstream PORT
"""

from __future__ import annotations

import json
import sys

HOST = "127.0.0.1"
UPSTREAM_KEY = "bench-upstream-key"  # what the gateways under test send; the load client sends another

# ---- the request bodies -----------------------------------------------------------------------

STATE = "I was charged twice for order #4411 and want one of the charges refunded today."
S1_QUESTIONS = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for a refund?"},
    "tone": {"type": "choice", "instructions": "Tone?", "criteria": {"calm": None, "angry": "upset", "neutral": None}},
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["can wait", "this week", "today"]},
}
OPENAI_QUESTIONS = [
    {"type": "predicate", "name": "refund", "instructions": "Is the customer asking for a refund?"},
    {"type": "choice", "name": "tone", "instructions": "Tone?",
     "choices": [{"value": "calm"}, {"value": "angry", "description": "upset"}, {"value": "neutral"}]},
    {"type": "score", "name": "urgency", "instructions": "How urgent?",
     "levels": [{"label": "can wait"}, {"label": "this week"}, {"label": "today"}]},
]


def systemone_body(model: str) -> bytes:
    return json.dumps({"model": model, "state": STATE, "questions": S1_QUESTIONS}).encode()


def openai_body(model: str) -> bytes:
    return json.dumps({"model": model, "input": STATE, "questions": OPENAI_QUESTIONS}).encode()


# ---- the zero-delay upstream (its own process) ------------------------------------------------

# One valid answer per question, precomputed: probabilities sum to 1, confidences follow the Jev
# formulas (choice: (n*max-1)/(n-1) = 0.7; score: 1 - mean distance to the mode / uniform's = 0.625).
S1_ANSWERS = {
    "refund": {"type": "noul", "noul": 0.91},
    "tone": {"type": "choice", "choice": "angry", "confidence": 0.7,
             "probabilities": {"calm": 0.1, "angry": 0.8, "neutral": 0.1}},
    "urgency": {"type": "score", "score": 1.75, "confidence": 0.625,
                "legend": {"0": "can wait", "1": "this week", "2": "today"},
                "probabilities": {"0": 0.05, "1": 0.15, "2": 0.8}},
}
OPENAI_ANSWERS = {
    "refund": {"type": "predicate", "name": "refund", "probability": 0.91},
    "tone": {"type": "choice", "name": "tone", "choice": "angry", "confidence": 0.7,
             "probabilities": [{"value": "calm", "probability": 0.1}, {"value": "angry", "probability": 0.8},
                               {"value": "neutral", "probability": 0.1}]},
    "urgency": {"type": "score", "name": "urgency", "score": 1.75, "confidence": 0.625,
                "probabilities": [{"value": 0, "label": "can wait", "probability": 0.05},
                                  {"value": 1, "label": "this week", "probability": 0.15},
                                  {"value": 2, "label": "today", "probability": 0.8}]},
}


def serve_upstream(port: int) -> None:
    """TypeSafe ``/v1/systemone`` and OpenAI ``/v1/decisions``: parse the body, answer each question asked."""
    from aiohttp import web

    calls = {"gateway": 0, "direct": 0}
    gateway_auth = f"Bearer {UPSTREAM_KEY}"

    def count(request: web.Request) -> None:
        calls["gateway" if request.headers.get("Authorization") == gateway_auth else "direct"] += 1

    def reply(status: int, payload: dict, request_id: str) -> web.Response:
        return web.Response(status=status, body=json.dumps(payload).encode(), content_type="application/json",
                            headers={request_id: "req-bench"})

    async def systemone(request: web.Request) -> web.Response:
        count(request)
        raw = await request.read()
        try:
            body = json.loads(raw)
            answers = {qid: S1_ANSWERS[qid] for qid in body["questions"]}
        except (ValueError, KeyError, TypeError) as exc:
            return reply(422, {"detail": [{"loc": ["body"], "msg": f"unexpected body ({exc!r})",
                                           "type": "value_error"}]}, "x-typesafe-request-id")
        return reply(200, {"model": "jev-1.13-20260917", "answers": answers,
                           "usage": {"input_tokens": len(raw) // 4, "output_tokens": 0}}, "x-typesafe-request-id")

    async def decisions(request: web.Request) -> web.Response:
        count(request)
        raw = await request.read()
        try:
            body = json.loads(raw)
            answers = [OPENAI_ANSWERS[q["name"]] for q in body["questions"]]
        except (ValueError, KeyError, TypeError) as exc:
            return reply(400, {"error": {"message": f"unexpected body ({exc!r})", "type": "invalid_request_error",
                                         "param": None, "code": None}}, "x-request-id")
        tokens = len(raw) // 4
        return reply(200, {"model": body.get("model"), "answers": answers,
                           "usage": {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
                                     "output_tokens": 0, "total_tokens": tokens}}, "x-request-id")

    async def counts(request: web.Request) -> web.Response:
        return web.json_response(calls)

    app = web.Application()
    app.router.add_get("/calls", counts)
    app.router.add_post("/v1/systemone", systemone)
    app.router.add_post("/v1/decisions", decisions)
    web.run_app(app, host=HOST, port=port, print=None, access_log=None)


if __name__ == "__main__":
    serve_upstream(int(sys.argv[1]))

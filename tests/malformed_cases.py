"""Malformed requests for both routes, as plain data.

Each ``Case`` is (route, body, status, field): ``field`` is a substring the error must name, the
OpenAI ``error.param`` on ``/v1/decisions`` (400) or a System One ``detail[].loc`` joined with "." on
``/v1/systemone`` (422). Used at the translator level (tests/translators/test_malformed.py) and over
HTTP against the running gateway.
"""

from __future__ import annotations

import base64
from typing import Any, NamedTuple

OPENAI = "/v1/decisions"
SYSTEMONE = "/v1/systemone"


class Case(NamedTuple):
    route: str
    body: Any
    status: int
    field: str


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode("ascii")


def oa(questions: Any = None, input: Any = "I was charged twice.", **extra: Any) -> dict:
    """An OpenAI body; pass ``questions`` / ``input`` to break them, ``extra`` for more top-level fields."""
    body = {"model": "gpt-6-luna", "input": input,
            "questions": questions if questions is not None else [
                {"type": "predicate", "name": "dup", "instructions": "Is this a duplicate charge?"}]}
    body.update(extra)
    return body


def pred(**fields: Any) -> dict:
    return {"type": "predicate", "instructions": "Is it true?", **fields}


def choice(values: list, **fields: Any) -> dict:
    return {"type": "choice", "instructions": "Which one?", "choices": [{"value": v} for v in values], **fields}


def score(labels: list, **fields: Any) -> dict:
    return {"type": "score", "instructions": "How much?", "levels": [{"label": x} for x in labels], **fields}


def user(*parts: dict) -> list[dict]:
    return [{"role": "user", "content": list(parts)}]


def s1(questions: Any = None, state: Any = "I was charged twice.", **extra: Any) -> dict:
    """A System One body; pass ``questions`` / ``state`` to break them, ``extra`` for more top-level fields."""
    body = {"model": "jev-latest", "state": state,
            "questions": questions if questions is not None else {
                "billing": {"type": "noul", "instructions": "Is this about billing?"}}}
    body.update(extra)
    return body


def nested(depth: int) -> dict:
    """A JSON object ``depth`` containers deep."""
    data: dict = {"leaf": 1}
    for _ in range(depth - 1):
        data = {"next": data}
    return data


NOUL = {"type": "noul", "instructions": "Is this about billing?"}
IMAGE_STATE = {"photo": "<image:abc>"}

MALFORMED: list[Case] = [
    # ---------------------------------------------------------------- OpenAI Decisions (400, param)
    Case(OPENAI, oa(questions=[]), 400, "questions"),
    Case(OPENAI, oa(questions=[pred() for _ in range(401)]), 400, "questions"),
    Case(OPENAI, oa(questions=[pred(), pred(), choice(["only"])]), 400, "questions[2].choices"),
    Case(OPENAI, oa(questions=[choice([f"c{i}" for i in range(256)])]), 400, "questions[0].choices"),
    Case(OPENAI, oa(questions=[choice(["a", "a"])]), 400, "questions[0].choices[1].value"),
    Case(OPENAI, oa(questions=[choice([True, "true"])]), 400, "questions[0].choices[1].value"),
    Case(OPENAI, oa(questions=[pred(), score(["low"])]), 400, "questions[1].levels"),
    Case(OPENAI, oa(questions=[score([str(i) for i in range(11)])]), 400, "questions[0].levels"),
    Case(OPENAI, oa(questions=[{"type": "noul", "instructions": "x"}]), 400, "questions[0].type"),
    Case(OPENAI, oa(questions=[{"instructions": "x"}]), 400, "questions[0].type"),
    Case(OPENAI, oa(questions=[pred(foo=1)]), 400, "questions[0].foo"),
    Case(OPENAI, oa(questions=[pred(name="   ")]), 400, "questions[0].name"),
    Case(OPENAI, oa(questions=[{"type": "predicate"}]), 400, "questions[0].instructions"),
    Case(OPENAI, oa(questions=[pred(instructions="  ")]), 400, "questions[0].instructions"),
    Case(OPENAI, oa(questions=[{"type": "choice", "instructions": "x", "choices": [{"value": 1}, {"value": 2}]}]),
         400, "questions[0].choices[0].value"),
    Case(OPENAI, oa(questions=[{"type": "score", "instructions": "x", "levels": [{"label": 1}, {"label": "b"}]}]),
         400, "questions[0].levels[0].label"),
    Case(OPENAI, oa(questions=[choice(["a", "b"], choices=[{"value": "a", "weight": 2}, {"value": "b"}])]),
         400, "questions[0].choices[0].weight"),
    Case(OPENAI, oa(input=""), 400, "input"),
    Case(OPENAI, oa(input="   \n "), 400, "input"),
    Case(OPENAI, oa(input=[]), 400, "input"),
    Case(OPENAI, oa(input=42), 400, "input"),
    Case(OPENAI, oa(input=user({"type": "input_text", "text": "  "})), 400, "input"),
    Case(OPENAI, oa(input=[{"role": "assistant", "content": "hi"}]), 400, "input[0].role"),
    Case(OPENAI, oa(input=[{"role": "user", "content": "hi", "mood": "calm"}]), 400, "input[0].mood"),
    Case(OPENAI, oa(input=user({"type": "input_text", "text": "hi", "lang": "en"})), 400, "input[0].content[0].lang"),
    Case(OPENAI, oa(input=user({"type": "input_audio", "data": "x"})), 400, "input[0].content[0].type"),
    Case(OPENAI, oa(input=user({"type": "input_image", "image_url": "ftp://example.com/a.png"})),
         400, "input[0].content[0].image_url"),
    Case(OPENAI, oa(input=user({"type": "input_image", "image_url": "data:text/plain;base64,aGk="})),
         400, "input[0].content[0].image_url"),
    Case(OPENAI, oa(input=user({"type": "input_text", "text": "see"},
                               {"type": "input_image", "image_url": "data:image/png;base64,@@not base64@@"})),
         400, "input[0].content[1].image_url"),
    Case(OPENAI, oa(input=user({"type": "input_image", "image_url": "data:image/png;base64," + PNG,
                                "detail": "ultra"})), 400, "input[0].content[0].detail"),
    Case(OPENAI, oa(input=user({"type": "input_json", "data": "not an object"})), 400, "input[0].content[0].data"),
    Case(OPENAI, oa(input=[{"role": "system", "content": [{"type": "input_image", "image_url": "https://x.io/a.png"}]}]),
         400, "input[0].content[0]"),
    Case(OPENAI, oa(input=user({"type": "input_image", "image_url": "data:image/png;base64,"})),
         400, "input[0].content[0].image_url"),
    Case(OPENAI, oa(questions=[choice(["a", "  "])]), 400, "questions[0].choices[1].value"),
    Case(OPENAI, oa(questions=[pred(instructions=[{"type": "input_text", "text": "Is it?",
                                                   "prompt_cache_breakpoint": {"mode": "explicit"}}])]),
         400, "questions[0].instructions[0].prompt_cache_breakpoint"),
    Case(OPENAI, oa(temperature=0.2), 400, "temperature"),
    Case(OPENAI, {"model": "gpt-6-luna", "questions": [pred()]}, 400, "input"),
    Case(OPENAI, {"model": "gpt-6-luna", "input": "hi"}, 400, "questions"),
    Case(OPENAI, {"input": "hi", "questions": [pred()]}, 400, "model"),
    Case(OPENAI, oa(prompt_cache_options={"ttl": "1h"}), 400, "prompt_cache_options.ttl"),
    Case(OPENAI, oa(safety_identifier=7), 400, "safety_identifier"),
    # Rules from the seeds (SGLang "Errors", its System One bullets, LiteLLM validation, the OpenAI SDK types)
    Case(OPENAI, oa(questions=[pred(instructions=[])]), 400, "questions[0].instructions"),
    Case(OPENAI, oa(questions=[pred(instructions=[{"type": "input_text", "text": " "},
                                                  {"type": "input_text", "text": "\n"}])]),
         400, "questions[0].instructions"),
    Case(OPENAI, oa(input=[{"role": "user", "content": []}]), 400, "input[0].content"),
    Case(OPENAI, oa(questions=[score(["low", "  ", "high"])]), 400, "questions[0].levels[1].label"),
    Case(OPENAI, oa(questions=[score(["", "high"])]), 400, "questions[0].levels[0].label"),
    Case(OPENAI, oa(questions=[choice(["billing", "two\nlines"])]), 400, "questions[0].choices[1].value"),
    Case(OPENAI, oa(questions=[choice(["tab\there", "billing"])]), 400, "questions[0].choices[0].value"),
    Case(OPENAI, oa(questions=[choice(["line\u2028separator", "billing"])]), 400, "questions[0].choices[0].value"),
    Case(OPENAI, oa(questions=[choice(["Billing", "billing"])]), 400, "questions[0].choices[1].value"),
    Case(OPENAI, oa(questions=[choice(["billing", "sales", " billing "])]), 400, "questions[0].choices[2].value"),
    Case(OPENAI, oa(questions=[choice([True, "True"])]), 400, "questions[0].choices[1].value"),
    Case(OPENAI, oa(input=user({"type": "input_json", "data": nested(33)})), 400, "input[0].content[0].data"),
    Case(OPENAI, oa(input=user({"type": "input_json", "data": {"v": list(range(10_000))}})),
         400, "input[0].content[0].data"),
    Case(OPENAI, oa(input=user({"type": "input_json", "data": {"text": "x" * (256 * 1024)}})),
         400, "input[0].content[0].data"),
    Case(OPENAI, oa(questions=[pred(instructions=[{"type": "input_text", "text": "Is it?"},
                                                  {"type": "input_json", "data": nested(40)}])]),
         400, "questions[0].instructions[1].data"),
    # ---------------------------------------------------------------- System One (422, detail[].loc)
    Case(SYSTEMONE, s1(state=None), 422, "body.state"),
    Case(SYSTEMONE, s1(state=3.5), 422, "body.state"),
    Case(SYSTEMONE, s1(state="  "), 422, "body.state"),
    Case(SYSTEMONE, {"model": "jev-latest", "questions": {"q": NOUL}}, 422, "body.state"),
    Case(SYSTEMONE, {"model": "jev-latest", "state": "hi"}, 422, "body.questions"),
    Case(SYSTEMONE, {"state": "hi", "questions": {"q": NOUL}}, 422, "body.model"),
    Case(SYSTEMONE, s1(questions={}), 422, "body.questions"),
    Case(SYSTEMONE, s1(questions=[NOUL]), 422, "body.questions"),
    Case(SYSTEMONE, s1(questions={f"q{i}": NOUL for i in range(401)}), 422, "body.questions"),
    Case(SYSTEMONE, s1(questions={"  ": NOUL}), 422, "body.questions"),
    Case(SYSTEMONE, s1(questions={"q": "Is this about billing?"}), 422, "body.questions.q"),
    Case(SYSTEMONE, s1(questions={"q": {"type": "unknown", "instructions": "x"}}), 422, "body.questions.q.type"),
    Case(SYSTEMONE, s1(questions={"q": {"instructions": "x"}}), 422, "body.questions.q.type"),
    Case(SYSTEMONE, s1(questions={"q": {"type": "noul"}}), 422, "body.questions.q.noul"),
    Case(SYSTEMONE, s1(questions={"q": {"type": "noul", "criteria": {"true": None}}}), 422, "body.questions.q.noul"),
    Case(SYSTEMONE, s1(questions={"q": {"type": "noul", "instructions": "x", "criteria": {"maybe": "y"}}}),
         422, "body.questions.q.noul.criteria.maybe"),
    Case(SYSTEMONE, s1(questions={"tone": {"type": "choice", "instructions": "Tone?"}}),
         422, "body.questions.tone.choice.criteria"),
    Case(SYSTEMONE, s1(questions={"tone": {"type": "choice", "criteria": {}}}), 422, "body.questions.tone.choice.criteria"),
    Case(SYSTEMONE, s1(questions={"tone": {"type": "choice", "criteria": {f"c{i}": None for i in range(256)}}}),
         422, "body.questions.tone.choice.criteria"),
    Case(SYSTEMONE, s1(questions={"tone": {"type": "choice", "criteria": {"": None, "calm": None}}}),
         422, "body.questions.tone.choice.criteria"),
    Case(SYSTEMONE, s1(questions={"tone": {"type": "choice", "criteria": ["calm", "angry"]}}),
         422, "body.questions.tone.choice.criteria"),
    Case(SYSTEMONE, s1(questions={"urgency": {"type": "score", "criteria": []}}), 422,
         "body.questions.urgency.score.criteria"),
    Case(SYSTEMONE, s1(questions={"urgency": {"type": "score", "criteria": [str(i) for i in range(11)]}}),
         422, "body.questions.urgency.score.criteria"),
    Case(SYSTEMONE, s1(questions={"urgency": {"type": "score", "criteria": {"low": 1}}}),
         422, "body.questions.urgency.score.criteria"),
    Case(SYSTEMONE, s1(questions={"dog": {"type": "box"}}), 422, "body.questions.dog.box.instructions"),
    # Rules from the seeds (SGLang's System One bullets, MAX's notes, LiteLLM validation)
    Case(SYSTEMONE, s1(questions={"urgency": {"type": "score", "criteria": ["low", None, "high"]}}),
         422, "body.questions.urgency.score.criteria.1"),
    Case(SYSTEMONE, s1(questions={"urgency": {"type": "score", "criteria": ["low", "   "]}}),
         422, "body.questions.urgency.score.criteria.1"),
    Case(SYSTEMONE, s1(questions={"urgency": {"type": "score", "criteria": [None]}}),
         422, "body.questions.urgency.score.criteria.0"),
    Case(SYSTEMONE, s1(questions={"tone": {"type": "choice", "criteria": {"calm": None, "two\nlines": None}}}),
         422, "body.questions.tone.choice.criteria.two\nlines"),
    Case(SYSTEMONE, s1(questions={"tone": {"type": "choice", "criteria": {"calm\x00": None, "angry": None}}}),
         422, "body.questions.tone.choice.criteria.calm\x00"),
    Case(SYSTEMONE, s1(questions={"tone": {"type": "choice", "criteria": {"Calm": None, "calm ": "upset"}}}),
         422, "body.questions.tone.choice.criteria.calm "),
    Case(SYSTEMONE, s1(temperature=0.5), 422, "body.temperature"),
    Case(SYSTEMONE, s1(prompt_format_version=1), 422, "body.prompt_format_version"),
    Case(SYSTEMONE, s1(return_prompt_token_ids=False), 422, "body.return_prompt_token_ids"),
    Case(SYSTEMONE, s1(state=IMAGE_STATE, assets={"<image:abc>": {"type": "image", "format": "png",
                                                                   "data_base64": ""}}),
         422, "body.assets.<image:abc>"),
    Case(SYSTEMONE, s1(questions={"tone": {"type": "choice", "instruction": "Tone?", "criteria": {"calm": None}}}),
         422, "body.questions.tone.choice.instruction"),
    Case(SYSTEMONE, s1(questions={"urgency": {"type": "score", "criteria": ["low", "high"], "weight": 2}}),
         422, "body.questions.urgency.score.weight"),
    Case(SYSTEMONE, s1(state=IMAGE_STATE, assets={}), 422, "body.assets"),
    Case(SYSTEMONE, s1(state="no image here", assets={"<image:abc>": {"type": "image", "format": "png",
                                                                       "data_base64": PNG}}),
         422, "body.assets.<image:abc>"),
    Case(SYSTEMONE, s1(state=IMAGE_STATE, assets={"<image:abc>": {"type": "image", "format": "png",
                                                                   "data_base64": "!!not base64!!"}}),
         422, "body.assets.<image:abc>"),
    Case(SYSTEMONE, s1(state=IMAGE_STATE, assets={"<image:abc>": {"type": "image", "part": "asset-0"}}),
         422, "body.assets.<image:abc>"),
    Case(SYSTEMONE, s1(state=IMAGE_STATE, assets={"<image:abc>": {"type": "image", "format": "bmp",
                                                                   "data_base64": PNG}}),
         422, "body.assets.<image:abc>.format"),
    Case(SYSTEMONE, s1(state=IMAGE_STATE, assets={"<image:abc>": {"type": "video", "format": "png",
                                                                   "data_base64": PNG}}),
         422, "body.assets.<image:abc>.type"),
]

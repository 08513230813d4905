"""``POST /v1/systemone``: the System One request and response shape (seed 000, "System One compatible API").

Schema problems are all collected and answered with 422 and FastAPI-style ``detail`` entries (input
echo stripped); refusals of the model or prompt are 400, as on ``/v1/decisions``. Confidence follows
the Jev formulas of ``translators.confidence``; ``x_label_mass`` carries the label mass.
"""

from __future__ import annotations

from typing import Any

from backend.decide import Decider
from backend.errors import BackendRefusal
from backend.prompts import QuestionSpec
from backend.routes_decisions import check_model_name
from translators.confidence import choice_confidence, score_confidence
from translators.content import compact_json
from translators.sglang import is_blank, option_name_problem

ROUTE = "/v1/systemone"
DECISIONS_ONLY_FIELDS = ("temperature", "prompt_format_version", "return_prompt_token_ids")
QUESTION_KEYS = {"type", "instructions", "criteria"}
TYPES = ("noul", "choice", "score", "box")
MAX_OPTIONS = 255
MAX_LEVELS = 10


class _Problems:
    def __init__(self) -> None:
        self.items: list[dict] = []

    def add(self, loc: tuple, msg: str, kind: str = "value_error") -> None:
        self.items.append({"type": kind, "loc": ["body", *loc], "msg": msg})

    def raise_if_any(self) -> None:
        if self.items:
            first = self.items[0]
            where = ".".join(str(p) for p in first["loc"][1:])
            raise BackendRefusal(f"{where}: {first['msg']}", status=422, payload={"detail": self.items})


def _content(value: Any) -> bool:
    return isinstance(value, (str, dict, list))


def _text(value: Any) -> str:
    return "" if value is None else compact_json(value)


def _check_question(qid: str, q: Any, problems: _Problems) -> None:
    if not isinstance(q, dict):
        problems.add(("questions", qid), "Input should be a valid dictionary", "dict_type")
        return
    kind = q.get("type")
    if kind not in TYPES:
        problems.add(("questions", qid), f"Input tag '{kind}' found using 'type' does not match any of the "
                     "expected tags: 'noul', 'choice', 'score', 'box'", "union_tag_invalid")
        return
    at = ("questions", qid, kind)
    for key in sorted(set(q) - QUESTION_KEYS):
        problems.add((*at, key), "Extra inputs are not permitted", "extra_forbidden")
    if q.get("instructions") is not None and not _content(q["instructions"]):
        problems.add((*at, "instructions"), "Input should be a string, an object or an array")
    criteria = q.get("criteria")
    if kind == "noul":
        if criteria is not None:
            if not isinstance(criteria, dict):
                problems.add((*at, "criteria"), "Input should be a valid dictionary", "dict_type")
                return
            for key in sorted(set(criteria) - {"true", "false"}):
                problems.add((*at, "criteria", key), "Extra inputs are not permitted", "extra_forbidden")
        described = isinstance(criteria, dict) and any(criteria.get(k) is not None for k in ("true", "false"))
        if is_blank(q.get("instructions")) and not described:
            problems.add(at, "a noul question needs instructions or a true or false criterion")
    elif kind == "choice":
        if not isinstance(criteria, dict):
            problems.add((*at, "criteria"), "Input should be a valid dictionary", "dict_type")
        elif not 1 <= len(criteria) <= MAX_OPTIONS:
            problems.add((*at, "criteria"), f"a choice takes 1 to {MAX_OPTIONS} options, not {len(criteria)}")
        else:
            problem = option_name_problem(list(criteria))
            if problem:
                problems.add((*at, "criteria"), problem)
    elif kind == "score":
        if not isinstance(criteria, list):
            problems.add((*at, "criteria"), "Input should be a valid list", "list_type")
        elif not 1 <= len(criteria) <= MAX_LEVELS:
            problems.add((*at, "criteria"), f"a score takes 1 to {MAX_LEVELS} levels, not {len(criteria)}")
        else:
            for i, level in enumerate(criteria):
                if is_blank(level):
                    problems.add((*at, "criteria", i), "levels must not be blank or null")
                elif not _content(level):
                    problems.add((*at, "criteria", i), "a level should be a string, an object or an array")


def _validate(body: Any) -> None:
    problems = _Problems()
    if not isinstance(body, dict):
        problems.add((), "Input should be a valid dictionary", "dict_type")
        problems.raise_if_any()
    if "state" not in body:
        problems.add(("state",), "Field required", "missing")
    if body.get("model") is not None and not isinstance(body["model"], str):
        problems.add(("model",), "Input should be a valid string", "string_type")
    for name in DECISIONS_ONLY_FIELDS:
        if body.get(name) is not None:
            problems.add((name,), f"{name} is not part of this API, use /v1/decisions for it")
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        problems.add(("chat_template_kwargs",), "Input should be a valid dictionary", "dict_type")
    questions = body.get("questions")
    if not isinstance(questions, dict):
        problems.add(("questions",), "Input should be a valid dictionary", "dict_type")
    elif not questions:
        problems.add(("questions",), "Dictionary should have at least 1 item after validation, not 0", "too_short")
    else:
        for qid, q in questions.items():
            _check_question(qid, q, problems)
    problems.raise_if_any()


def spec_from_systemone(qid: str, q: dict) -> QuestionSpec:
    text = _text(q.get("instructions"))
    criteria: Any = q.get("criteria")  # JSON of the shape _check_question accepted for q["type"]
    if q["type"] == "noul":
        criteria = criteria or {}
        yes, no = criteria.get("true"), criteria.get("false")
        return QuestionSpec(qid, "yes_no", text, yes=None if yes is None else _text(yes),
                            no=None if no is None else _text(no))
    if q["type"] == "choice":
        return QuestionSpec(qid, "choice", text,
                            options=tuple((name, None if d is None else _text(d)) for name, d in criteria.items()))
    if q["type"] == "score":
        return QuestionSpec(qid, "score", text, levels=tuple(_text(level) for level in criteria))
    raise BackendRefusal(f"question '{qid}': box questions are not supported by this server")


async def systemone(decider: Decider, body: Any) -> dict:
    _validate(body)
    check_model_name(body.get("model"), ROUTE)
    if body.get("images") or body.get("assets"):
        raise BackendRefusal(f"{ROUTE} images require a model served with multimodal input, "
                             "and this model reads text only")
    questions: dict = body["questions"]
    specs = [spec_from_systemone(qid, q) for qid, q in questions.items()]
    state = compact_json(body["state"]) if body["state"] is not None else ""
    plans = await decider.prepare(state, specs, chat_template_kwargs=body.get("chat_template_kwargs"),
                                  allow_two_letters=True)
    answers, usage = await decider.answer(plans)
    rendered: dict[str, dict] = {}
    for answer in answers:
        qid, probs = answer.spec.id, list(answer.probabilities)
        if answer.spec.kind == "yes_no":
            rendered[qid] = {"type": "noul", "noul": probs[0], "x_label_mass": answer.label_mass}
        elif answer.spec.kind == "choice":
            rendered[qid] = {"type": "choice", "choice": answer.choice, "confidence": choice_confidence(probs),
                             "probabilities": answer.as_dict, "x_label_mass": answer.label_mass}
        else:
            levels = questions[qid]["criteria"]
            rendered[qid] = {"type": "score", "score": answer.score, "confidence": score_confidence(probs),
                             "legend": {str(i): level for i, level in enumerate(levels)},
                             "probabilities": answer.as_dict, "x_label_mass": answer.label_mass}
    return {"model": decider.model_name, "answers": rendered,
            "usage": {"input_tokens": usage.prompt_tokens, "output_tokens": 0}}

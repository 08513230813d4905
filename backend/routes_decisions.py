"""``POST /v1/decisions`` (SGLang's wire) and ``POST /v1/score`` (token ids in, probabilities out).

Handlers take the parsed JSON body and return the response body, or raise ``BackendRefusal``;
``backend.server`` and ``backend.inprocess`` turn refusals into the error envelope.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from backend.decide import Decider, label_mass, label_probabilities
from backend.errors import BackendRefusal
from backend.prompts import QuestionSpec
from backend.scoring import ScoreRow
from translators.content import compact_json
from translators.sglang import ChoiceQuestion, DecisionsRequest, ScoreQuestion, format_validation_error

ROUTE = "/v1/decisions"


def check_model_name(model: str | None, route: str) -> None:
    if model and ":" in model:
        adapter = model.split(":", 1)[1]
        raise BackendRefusal(f"model names the LoRA adapter '{adapter}', which {route} does not support")


def _optional_text(value: Any) -> str | None:
    return None if value is None else compact_json(value)


def spec_from_wire(question) -> QuestionSpec:
    text = compact_json(question.question)
    if isinstance(question, ChoiceQuestion):
        options = tuple((o.name, _optional_text(o.description)) for o in question.options)
        return QuestionSpec(question.id, "choice", text, options=options)
    if isinstance(question, ScoreQuestion):
        return QuestionSpec(question.id, "score", text, levels=tuple(compact_json(v) for v in question.levels))
    return QuestionSpec(question.id, "yes_no", text, yes=_optional_text(question.yes), no=_optional_text(question.no))


async def decisions(decider: Decider, body: Any) -> dict:
    if not isinstance(body, dict):
        raise BackendRefusal(f"{ROUTE} takes a JSON object")
    try:
        req = DecisionsRequest.model_validate(body)
    except ValidationError as err:
        raise BackendRefusal(format_validation_error(err)) from None
    check_model_name(req.model, ROUTE)
    if req.prompt_format_version is not None and req.prompt_format_version != decider.version:
        raise BackendRefusal(f"prompt_format_version {req.prompt_format_version} is not served, "
                             f"this server uses version {decider.version}")
    if req.images:
        raise BackendRefusal(f"{ROUTE} images require a model served with multimodal input, "
                             f"and this model reads text only")
    specs = [spec_from_wire(q) for q in req.questions]
    plans = await decider.prepare(compact_json(req.input), specs, temperature=req.temperature,
                                  chat_template_kwargs=req.chat_template_kwargs)
    if req.return_prompt_token_ids:
        for plan in plans:
            if len(plan.rows) > 1:
                raise BackendRefusal(f"question '{plan.spec.id}': return_prompt_token_ids cannot replay a question "
                                     "that is read as one row per level")
    answers, usage = await decider.answer(plans)
    rendered = {}
    for answer in answers:
        item: dict[str, Any] = {"type": answer.spec.kind, "probabilities": answer.as_dict}
        if answer.spec.kind == "choice":
            item["choice"] = answer.choice
        elif answer.spec.kind == "score":
            item["score"] = answer.score
        item["label_mass"] = answer.label_mass
        if req.return_prompt_token_ids:
            # multi-row questions were refused above, so every answer has its one row's ids
            assert answer.prompt_token_ids is not None and answer.label_token_ids is not None
            item["prompt_token_ids"] = list(answer.prompt_token_ids)
            item["label_token_ids"] = list(answer.label_token_ids)
        rendered[answer.spec.id] = item
    return {
        "object": "decisions",
        "model": req.model or "default",
        "prompt_format_version": decider.version,
        "answers": rendered,
        "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": 0, "total_tokens": usage.prompt_tokens,
                  "prompt_tokens_details": {"cached_tokens": usage.cached_tokens}},
    }


def _id_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise BackendRefusal(f"{what} must be a list of token ids")
    return value


async def score(decider: Decider, body: Any) -> dict:
    """SGLang's ``/v1/score`` for token ids: ``query`` + each item, probabilities of ``label_token_ids``."""
    if not isinstance(body, dict):
        raise BackendRefusal("/v1/score takes a JSON object")
    unknown = set(body) - {"query", "items", "label_token_ids", "apply_softmax", "return_token_logprobs",
                           "temperature", "model", "item_first"}
    if unknown:
        raise BackendRefusal(f"/v1/score does not take {sorted(unknown)}")
    query = _id_list(body.get("query") or [], "query")
    items = body.get("items")
    if not isinstance(items, list) or not items:
        raise BackendRefusal("items must be a nonempty list of token id lists")
    labels = body.get("label_token_ids")
    if isinstance(labels, list) and labels and all(isinstance(x, list) for x in labels):  # one list per item
        label_lists = [_id_list(x, f"label_token_ids[{i}]") for i, x in enumerate(labels)]
    else:
        label_lists = [_id_list(labels, "label_token_ids")] * len(items)
    if len(label_lists) != len(items):
        raise BackendRefusal("label_token_ids needs one list per item")
    temperature = body.get("temperature", 1.0)
    if not isinstance(temperature, (int, float)) or not math.isfinite(temperature) or temperature <= 0:
        raise BackendRefusal("temperature must be a finite number above 0")
    vocab = decider.loaded.model.config.vocab_size
    rows = []
    for i, (item, item_labels) in enumerate(zip(items, label_lists)):
        ids = query + _id_list(item, f"items[{i}]")
        if not ids or not item_labels or any(not 0 <= t < vocab for t in ids + item_labels):
            raise BackendRefusal(f"items[{i}]: token ids must be nonempty and below the vocabulary size {vocab}")
        if len(ids) >= decider.loaded.context_length:
            raise BackendRefusal(f"items[{i}]: the prompt has {len(ids)} tokens, which does not fit the context "
                                 f"length of {decider.loaded.context_length} tokens")
        rows.append(ScoreRow(tuple(ids), tuple(item_labels)))
    output = await decider.engine.score(rows)
    soft = body.get("apply_softmax", False)
    scores = [label_probabilities(lp, temperature) if soft else [math.exp(x) for x in lp]
              for lp in output.label_logprobs]
    result: dict[str, Any] = {"object": "scoring", "scores": scores,
                              "label_mass": [label_mass(lp) for lp in output.label_logprobs],
                              "usage": {"prompt_tokens": sum(len(r.prompt_ids) for r in rows), "completion_tokens": 0,
                                        "total_tokens": sum(len(r.prompt_ids) for r in rows)}}
    if body.get("return_token_logprobs"):
        result["token_logprobs"] = output.label_logprobs
    return result

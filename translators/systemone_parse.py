"""System One request -> IR, every check done before any upstream call (422, FastAPI-style locs).

All problems in a request are reported together (``RequestInvalid.errors``), like FastAPI does.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from translators.content import mentions
from translators.errors import RequestInvalid
from translators.images import decode_base64, media_type_for_format, sniff_media_type
from translators.ir import DecisionInput, DecisionRequest, Image, Level, Option, Question
from translators.limits import DEFAULT_LIMITS, RequestLimits, count_problem
from translators.systemone_wire import SystemOneRequest
from translators.wire_errors import Loc, describe
from translators.wire_types import folded, has_control_character

KINDS = {"noul": "yes_no", "choice": "choice", "score": "score", "box": "box"}
REQUEST_FIELDS = ("state", "model", "questions", "assets")
# Fields of SGLang-style /v1/decisions that System One servers (SGLang's, MAX's) refuse unless null.
DECISIONS_ONLY_FIELDS = ("temperature", "prompt_format_version", "return_prompt_token_ids")
Parts = dict[str, tuple[str, bytes]]


def s1_loc(loc: Loc) -> Loc:
    """pydantic loc -> FastAPI loc: "body" first, helper tags dropped, the question type kept."""
    out: list[str | int] = ["body"]
    for i, part in enumerate(loc):
        if isinstance(part, str) and part.startswith("~"):
            if i == 2 and loc[0] == "questions" and part[1:] in KINDS:
                out.append(part[1:])
            continue
        out.append(part)
    return tuple(out)


def path_text(loc: Loc) -> str:
    """How a message names a field: ``questions.urgency.criteria`` (no "body", no type tag)."""
    parts = list(loc[1:] if loc and loc[0] == "body" else loc)
    if len(parts) > 2 and parts[0] == "questions" and parts[2] in KINDS:
        del parts[2]
    return ".".join(str(p) for p in parts) or "The request body"


class Problems:
    """Collects (loc, message, code) and raises them as one ``RequestInvalid`` (422)."""

    def __init__(self) -> None:
        self.items: list[RequestInvalid] = []

    def add(self, loc: Loc, message: str, code: str) -> None:
        self.items.append(RequestInvalid(message, loc=loc, status=422, code=code))

    def raise_any(self) -> None:
        if self.items:
            first, *rest = self.items
            raise RequestInvalid(first.message, loc=first.loc, status=422, code=first.code, errors=rest)


def parse_request(body: Any, limits: RequestLimits | None = None, parts: Parts | None = None) -> DecisionRequest:
    """Validate a System One body (and its multipart asset parts) and build the IR. Raises ``RequestInvalid`` 422."""
    limits = limits or DEFAULT_LIMITS
    problems = Problems()
    if not isinstance(body, dict):
        problems.add(("body",), "The request body must be a JSON object.", "object_type")
        problems.raise_any()
    try:
        SystemOneRequest.model_validate(body)
    except ValidationError as exc:
        for loc, message, code in describe(exc, path_text, s1_loc):
            problems.add(loc, message, code)
        problems.raise_any()
    _check_top(body, problems)
    _check_questions(body["questions"], limits, problems)
    images = _assets(body, parts or {}, problems)
    problems.raise_any()
    return _build(body, images)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _check_top(body: dict[str, Any], problems: Problems) -> None:
    if body.get("model") is None:
        problems.add(("body", "model"), "model is required (a model name such as jev-latest).", "missing")
    elif not body["model"].strip():
        problems.add(("body", "model"), "model must not be blank.", "blank")
    if isinstance(body["state"], str) and not body["state"].strip():
        problems.add(("body", "state"), "state must not be empty or blank.", "blank")
    for name in DECISIONS_ONLY_FIELDS:
        if body.get(name) is not None:
            problems.add(("body", name), f"{name} belongs to SGLang-style /v1/decisions, not to System One; "
                                         "remove it.", "unknown_field")


def _check_questions(questions: dict[str, Any], limits: RequestLimits, problems: Problems) -> None:
    problem = count_problem("questions", len(questions), limits.min_questions, limits.max_questions)
    if problem:
        problems.add(("body", "questions"), problem, "count")
    low_choices, high_choices = limits.choices("systemone")
    low_levels, high_levels = limits.levels("systemone")
    for key, question in questions.items():
        kind = question["type"]
        where = f"questions.{key}"
        base = ("body", "questions", key, kind)
        if not key.strip():
            problems.add(("body", "questions", key), "Question ids (the keys of questions) must not be blank.",
                         "blank")
        if kind == "noul":
            criteria = question.get("criteria") or {}
            if _blank(question.get("instructions")) and all(v is None for v in criteria.values()):
                problems.add(base, f"{where} is a noul question and needs instructions or at least one "
                                   "non-null criterion (true or false).", "missing")
        elif kind == "box" and _blank(question.get("instructions")):
            problems.add(base + ("instructions",), f"{where}.instructions must not be blank for a box question.",
                         "blank")
        elif kind == "choice":
            labels = question["criteria"]
            problem = count_problem(f"{where}.criteria", len(labels), low_choices, high_choices)
            if problem:
                problems.add(base + ("criteria",), problem, "count")
            _check_labels(where, base + ("criteria",), labels, problems)
        elif kind == "score":
            problem = count_problem(f"{where}.criteria", len(question["criteria"]), low_levels, high_levels)
            if problem:
                problems.add(base + ("criteria",), problem, "count")
            for j, level in enumerate(question["criteria"]):
                if _blank(level):
                    shown = "null" if level is None else "blank"
                    problems.add(base + ("criteria", j), f"{where}.criteria[{j}] is {shown}; every level needs a "
                                                         "description (a string, an object or an array).", "blank")


def _check_labels(where: str, loc: Loc, labels: dict[str, Any], problems: Problems) -> None:
    """Choice labels: not blank, one line without control characters, distinct after trimming and case folding."""
    seen: dict[str, str] = {}
    for label in labels:
        if not label.strip():
            problems.add(loc + (label,), f"{where}.criteria labels must not be blank.", "blank")
        elif has_control_character(label):
            problems.add(loc + (label,), f"{where}.criteria label {label!r} must not contain control or line break "
                                         "characters.", "control_character")
        elif folded(label) in seen:
            problems.add(loc + (label,), f"{where}.criteria label {label!r} repeats {seen[folded(label)]!r} after "
                                         "trimming and case folding; labels must be distinct.", "duplicate")
        else:
            seen[folded(label)] = label


def _assets(body: dict[str, Any], parts: Parts, problems: Problems) -> dict[str, Image]:
    assets = body.get("assets")
    if assets is None:
        return {}
    if not assets:
        problems.add(("body", "assets"), "assets must not be empty when given; leave it out instead.", "too_short")
    searchable = [body["state"]] + [[q.get("instructions"), q.get("criteria")] for q in body["questions"].values()]
    images: dict[str, Image] = {}
    for ref, asset in assets.items():
        loc = ("body", "assets", ref)
        if not ref.strip():
            problems.add(loc, "Asset refs (the keys of assets) must not be blank.", "blank")
            continue
        image = _asset_image(ref, asset, parts, problems)
        if image is None:
            continue
        if not mentions(searchable, ref):
            problems.add(loc, f"assets.{ref} is not mentioned in the state, instructions or criteria.", "unused_asset")
            continue
        images[ref] = image
    return images


def _asset_image(ref: str, asset: dict[str, Any], parts: Parts, problems: Problems) -> Image | None:
    loc = ("body", "assets", ref)
    if "part" in asset:
        if asset["part"] not in parts:
            problems.add(loc + ("part",), f"assets.{ref}.part names a multipart part {asset['part']!r} that the "
                                          "request does not carry.", "missing_part")
            return None
        content_type, data = parts[asset["part"]]
        declared = (content_type or "").split(";", 1)[0].strip().lower()
        from_header = media_type_for_format(declared[len("image/"):]) if declared.startswith("image/") else None
        media_type = sniff_media_type(data) or from_header
    else:
        try:
            data = decode_base64(asset["data_base64"])
        except ValueError:
            problems.add(loc + ("data_base64",), f"assets.{ref}.data_base64 is not valid base64.", "invalid_base64")
            return None
        media_type = media_type_for_format(asset["format"])
    if not data:
        problems.add(loc, f"assets.{ref} is empty; an image needs some bytes.", "empty_asset")
        return None
    if media_type is None:
        problems.add(loc, f"assets.{ref} is not a PNG, JPEG, WebP or GIF image.", "unknown_image_type")
        return None
    return Image(ref=ref, media_type=media_type, data=data)


def _question(key: str, raw: dict[str, Any]) -> Question:
    kind = raw["type"]
    criteria: Any = raw.get("criteria")  # JSON of the shape _check_questions accepted for kind
    return Question(
        id=key,
        kind=KINDS[kind],  # type: ignore[arg-type]
        instructions=raw.get("instructions"),
        options=tuple(Option(label, text) for label, text in criteria.items()) if kind == "choice" else (),
        levels=tuple(Level(level) for level in criteria) if kind == "score" else (),
        criteria=criteria if kind == "noul" else None,
    )


def _build(body: dict[str, Any], images: dict[str, Image]) -> DecisionRequest:
    state_text = json.dumps(body["state"], ensure_ascii=False)
    order = sorted(images, key=lambda ref: (state_text.find(ref) % (len(state_text) + 1), list(images).index(ref)))
    return DecisionRequest(
        model=body["model"],
        wire="systemone",
        input=DecisionInput(state=body["state"], images={ref: images[ref] for ref in order}),
        questions=tuple(_question(key, raw) for key, raw in body["questions"].items()),
        extra={k: v for k, v in body.items() if k not in REQUEST_FIELDS},
    )

"""Can this provider serve this request? Checked before any upstream call (pure).

Errors carry a wire-neutral location (``translators.errors.Where``); the caller's wire spells it.
Messages carry a fixed capacity phrase so benchmark runners can tell "unsupported" from "broken":
"options per choice", "a score takes N to M levels", "maximum context length", "images",
"box questions".
"""

from __future__ import annotations

import json
from typing import Any

from providers.base import Limits
from translators.errors import IMAGES, Unsupported, Where
from translators.ir import DecisionRequest, Question

CHARS_PER_TOKEN = 4  # a rough, deliberately generous estimate: only clearly oversized inputs are refused


def check(provider: str, limits: Limits, req: DecisionRequest, *, inline_images_only: bool = True) -> None:
    """Raise ``Unsupported`` (400) naming the provider and the reason, or return."""
    for index, question in enumerate(req.questions):
        _check_question(provider, limits, req, index, question)
    _check_images(provider, limits, req, inline_images_only)


def check_context(provider: str, limits: Limits, req: DecisionRequest) -> None:
    """The estimated input of one upstream call against the provider's context length."""
    if limits.max_context_tokens is None:
        return
    tokens = estimate_tokens(req)
    if tokens > limits.max_context_tokens:
        raise Unsupported(
            f"Provider '{provider}' cannot serve this request: the input (about {tokens} tokens, estimated) "
            f"exceeds the maximum context length of {limits.max_context_tokens} tokens.",
            code="context_length_exceeded",
        )


def estimate_tokens(req: DecisionRequest) -> int:
    """About 4 characters a token over the input and every question's text (strings counted by
    length, other JSON by its compact encoding)."""
    chars = _chars(req.input.state if req.input.messages is None else req.input.messages)
    for q in req.questions:
        chars += _chars(q.instructions) + _chars(q.criteria)
        for option in q.options:
            chars += _chars(option.description) + len(option.key)
        for level in q.levels:
            chars += _chars(level.label)
    return chars // CHARS_PER_TOKEN


def _chars(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _check_question(provider: str, limits: Limits, req: DecisionRequest, index: int, q: Question) -> None:
    if q.kind == "choice":
        n = len(q.options)
        if n < limits.min_options or (limits.max_options is not None and n > limits.max_options):
            bound = f"{limits.min_options} to {limits.max_options}" if limits.max_options is not None \
                else f"at least {limits.min_options}"
            raise Unsupported(
                f"Provider '{provider}' cannot serve question '{q.name or q.id}': it takes {bound} options per "
                f"choice, and this choice has {n}.",
                loc=Where.of_question(index, q.id, "options"), code="too_many_options"
                if n > limits.min_options else "too_few_options",
            )
    elif q.kind == "score":
        n = len(q.levels)
        if n < limits.min_levels or (limits.max_levels is not None and n > limits.max_levels):
            bound = f"a score takes {limits.min_levels} to {limits.max_levels} levels" \
                if limits.max_levels is not None else f"a score takes {limits.min_levels} or more levels"
            raise Unsupported(
                f"Provider '{provider}' cannot serve question '{q.name or q.id}': {bound}, and this one has {n}.",
                loc=Where.of_question(index, q.id, "levels"), code="levels_out_of_range",
            )
    elif q.kind == "box" and not limits.box:
        raise Unsupported(
            f"Provider '{provider}' cannot serve question '{q.name or q.id}': box questions are not supported "
            f"by this provider.",
            loc=Where.of_question(index, q.id, "type"), code="box_unsupported",
        )


def _check_images(provider: str, limits: Limits, req: DecisionRequest, inline_only: bool) -> None:
    images = list(req.input.images.values())
    if not images:
        return
    loc = IMAGES
    if not limits.images:
        raise Unsupported(f"Provider '{provider}' cannot serve this request: it takes no images "
                          f"(text input only).", loc=loc, code="images_unsupported")
    if limits.max_images is not None and len(images) > limits.max_images:
        raise Unsupported(f"Provider '{provider}' cannot serve this request: it takes at most "
                          f"{limits.max_images} images per request, and this one has {len(images)}.",
                          loc=loc, code="too_many_images")
    for image in images:
        if image.data is None and inline_only:
            raise Unsupported(f"Provider '{provider}' cannot serve this request: it takes inline images only, "
                              f"not image URLs ({image.ref}).", loc=loc, code="image_url_unsupported")
        if image.data is not None and image.format not in limits.image_formats and not (
                image.format == "jpg" and "jpeg" in limits.image_formats):
            raise Unsupported(f"Provider '{provider}' cannot serve this request: it takes "
                              f"{', '.join(limits.image_formats)} images, not {image.media_type}.",
                              loc=loc, code="image_format_unsupported")

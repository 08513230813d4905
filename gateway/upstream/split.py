"""Splitting a request over a provider's question limit, and merging the answers back (pure)."""

from __future__ import annotations

from dataclasses import replace
from functools import reduce

from translators.ir import DecisionRequest, DecisionResult, Usage


def split_request(req: DecisionRequest, max_questions: int | None) -> list[DecisionRequest]:
    """Consecutive chunks of at most ``max_questions`` questions (the request itself when it fits)."""
    n = len(req.questions)
    if max_questions is None or n <= max_questions:
        return [req]
    if max_questions < 1:
        raise ValueError("max_questions must be at least 1")
    out, start = [], 0
    for size in chunk_sizes(n, -(-n // max_questions)):  # as few chunks as the limit allows
        out.append(req.with_questions(req.questions[start:start + size]))
        start += size
    return out


def chunk_sizes(n: int, chunks: int) -> list[int]:
    """``n`` questions over ``chunks`` consecutive chunks as even as possible, the first ones one longer:
    130 over two chunks -> 65 + 65, not 128 + 2. The one layout rule (the cache reads it back too)."""
    base, extra = divmod(n, chunks)
    return [base + (1 if index < extra else 0) for index in range(chunks)]


def merge_results(parts: list[DecisionResult]) -> DecisionResult:
    """One result from the chunks' results, in chunk order: answers concatenated, usage summed.

    The answering model is the first chunk's; ``extra`` keys of later chunks do not overwrite earlier ones.
    """
    if not parts:
        raise ValueError("nothing to merge")
    if len(parts) == 1:
        return parts[0]
    answers = tuple(a for part in parts for a in part.answers)
    usage = reduce(lambda a, b: a + b, (p.usage for p in parts), Usage(input_tokens=None, output_tokens=None))
    extra: dict = {}
    for part in parts:
        for key, value in part.extra.items():
            extra.setdefault(key, value)
    return replace(parts[0], answers=answers, usage=usage, extra=extra)

"""Where answers are kept: bytes in a shared state (memory, or Redis shared by every instance).

One entry per (deployment identity, input, question), written as a compact orjson list so a hit is
read back without pydantic or dataclass machinery:

    [version, deployment id, kind, probabilities, confidence, box, label_mass, extra, cost, usage]

``version`` is the model the upstream said answered (``DecisionResult.model``), ``cost`` this
question's share of what its call cost when it was paid (None when that cost was unknown), and
``usage`` its share of the call's tokens ``[input, output, cached, cache_write, reasoning]``: the
shares of one call add up to the call's, so a request answered wholly from the cache shows the
usage its answers were paid with.

In memory the entries sit in a ``MemoryState`` of their own, bounded by ``max_entries`` and
``max_bytes`` (least recently used first); with Redis, in a ``FailoverState`` over the cache's
Redis (memory with the same bounds while it is away). A state error is a miss, never a failed
request.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import orjson

from gateway.cache.settings import CacheSettings
from gateway.shared_state import REDIS_ERRORS, MemoryState, SharedState, state_from_settings
from translators.ir import Answer, Question, Usage

log = logging.getLogger("gateway.cache")

REDIS_TIMEOUT_S = 1.0
VERSION, DEPLOYMENT, KIND, PROBABILITIES, CONFIDENCE, BOX, LABEL_MASS, EXTRA, COST, USAGE = range(10)
ENTRY_FIELDS = 10


def encode_entry(version: str, deployment_id: str, answer: Answer, cost: float | None,
                 usage: list[int | None]) -> bytes:
    return orjson.dumps([version, deployment_id, answer.kind, answer.probabilities, answer.confidence, answer.box,
                         answer.label_mass, answer.extra, cost, usage])


def decode_entry(raw: bytes) -> list[Any] | None:
    """The entry's fields, or None when the bytes are not an entry of this layout."""
    try:
        entry = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(entry, list) or len(entry) != ENTRY_FIELDS or not isinstance(entry[VERSION], str):
        return None
    return entry


def answer_of(entry: list[Any], question: Question) -> Answer | None:
    """The cached answer as ``question``'s (its id), or None when it does not fit the question."""
    probabilities = entry[PROBABILITIES]
    if entry[KIND] != question.kind or not isinstance(probabilities, list) or len(probabilities) != question.size:
        return None
    return Answer(question.id, question.kind, tuple(probabilities), entry[CONFIDENCE], entry[BOX], entry[LABEL_MASS],
                  entry[EXTRA] or {})


def usage_of(entry: list[Any]) -> Usage:
    tokens = entry[USAGE]
    if not isinstance(tokens, list) or len(tokens) != 5:
        return Usage(input_tokens=None, output_tokens=None)
    return Usage(input_tokens=tokens[0], output_tokens=tokens[1], cached_tokens=tokens[2] or 0,
                 cache_write_tokens=tokens[3] or 0, reasoning_tokens=tokens[4] or 0)


def usage_share(usage: Usage, paid: int, index: int) -> list[int | None]:
    """Question ``index`` of ``paid``'s share of a call's tokens (the remainder to the first ones)."""
    def share(total: int | None) -> int | None:
        if total is None:
            return None
        base, extra = divmod(total, paid)
        return base + (1 if index < extra else 0)

    return [share(usage.input_tokens), share(usage.output_tokens), share(usage.cached_tokens),
            share(usage.cache_write_tokens), share(usage.reasoning_tokens)]


class AnswerStore:
    """The entries' bytes; ``get_many`` is one round trip, ``put_many`` one pipelined write."""

    def __init__(self, state: SharedState) -> None:
        self.state = state

    @classmethod
    def from_settings(cls, settings: CacheSettings) -> AnswerStore:
        if settings.backend == "redis":
            return cls(state_from_settings(settings.redis_url, socket_timeout_s=REDIS_TIMEOUT_S,
                                           pool_timeout_s=REDIS_TIMEOUT_S, cache_max_entries=settings.max_entries,
                                           cache_max_bytes=settings.max_bytes))
        return cls(MemoryState(cache_max_entries=settings.max_entries, cache_max_bytes=settings.max_bytes))

    async def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        try:
            return await self.state.bytes_get_many(keys)
        except REDIS_ERRORS as exc:  # a bare RedisState; FailoverState never raises
            log.warning("answer cache: lookup failed (%s: %s); answering as misses", type(exc).__name__, exc)
            return [None] * len(keys)

    async def put_many(self, items: Sequence[tuple[str, bytes, float]]) -> None:
        if not items:
            return
        try:
            await self.state.bytes_set_many(items)
        except REDIS_ERRORS as exc:
            log.warning("answer cache: %d entries not stored (%s: %s)", len(items), type(exc).__name__, exc)

    def status(self) -> dict[str, Any]:
        return self.state.status()

    async def close(self) -> None:
        await self.state.close()

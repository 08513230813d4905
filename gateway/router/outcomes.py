"""The last outcome of each deployment, from real traffic: what ``/health/providers`` reports.

Every upstream call the router makes ends in ``Outcomes.record``: success or the error's status
and code, the call's latency and when it ended. The newest outcome is kept in this process and
written to the shared state (``router:last:<deployment id>``, living ``OUTCOME_TTL_S``) so that
every gateway process on one Redis reports the same deployments the same way. To keep that off
the hot path's budget, a deployment's outcome is written at once when it changes kind (success to
failure, one status to another) and otherwise at most once every ``PUSH_EVERY_S``; a reader takes
the newer of the shared and the local outcome, so this process's own calls are always exact.

Nothing here holds request content or a key: an error message is cut to ``MESSAGE_CHARS`` and the
deployment's own key is masked in it (the providers already redact it; this is the second lock).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Sequence
from dataclasses import asdict, dataclass

from gateway.shared_state import SharedState

OUTCOME_TTL_S = 24 * 3600.0
PUSH_EVERY_S = 1.0
MESSAGE_CHARS = 300
MAX_TRACKED = 10_000  # deployments remembered in this process (config entries: far fewer)


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    status: int  # 200, or the error's HTTP status
    latency_ms: float | None
    at: float  # Unix seconds when the call ended
    error: str | None = None  # the error's code or type (rate_limited, upstream_error, timeout...)
    message: str | None = None

    def as_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> Outcome | None:
        if not text:
            return None
        try:
            return cls(**json.loads(text))
        except (TypeError, ValueError):
            return None  # written by another version of the gateway: reported as unknown


def outcome_key(dep_id: str) -> str:
    return f"router:last:{dep_id}"


def masked(message: str, secret: str | None) -> str:
    """``message`` cut short, with ``secret`` (the deployment's key) replaced by ``***``."""
    if secret and len(secret) >= 4:
        message = message.replace(secret, "***")
    return message[:MESSAGE_CHARS]


class Outcomes:
    def __init__(self, state: SharedState):
        self.state = state
        self._local: dict[str, Outcome] = {}
        self._pushed: dict[str, Outcome] = {}  # the last outcome written to the shared state

    def record(self, dep_id: str, outcome: Outcome) -> Awaitable[None] | None:
        """Keep ``outcome``; the shared-state write to run in the background, or None when not due."""
        self._local.pop(dep_id, None)
        self._local[dep_id] = outcome
        if len(self._local) > MAX_TRACKED:
            oldest = next(iter(self._local))
            del self._local[oldest]
            self._pushed.pop(oldest, None)
        last = self._pushed.get(dep_id)
        if last is not None and last.ok == outcome.ok and last.status == outcome.status \
                and outcome.at - last.at < PUSH_EVERY_S:
            return None
        self._pushed[dep_id] = outcome
        return self.state.set_until(outcome_key(dep_id), outcome.as_json(), OUTCOME_TTL_S)

    async def read(self, dep_ids: Sequence[str]) -> list[Outcome | None]:
        """The newest known outcome of each deployment (any process's), None when it has none."""
        shared = await self.state.get_many([outcome_key(dep_id) for dep_id in dep_ids])
        out: list[Outcome | None] = []
        for dep_id, text in zip(dep_ids, shared):
            theirs, mine = Outcome.from_json(text), self._local.get(dep_id)
            if theirs is None or (mine is not None and mine.at >= theirs.at):
                out.append(mine)
            else:
                out.append(theirs)
        return out

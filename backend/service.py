"""One served model, ready to answer: load it once, build its engine, dispatch a path to its handler.

Both the HTTP app (``backend.server``) and the in-process entry (``backend.inprocess``) go through
``DecisionService.handle``, so a decision answers the same over HTTP and in-process.
"""

from __future__ import annotations

import json
from typing import Any

from backend import routes_decisions, systemone
from backend.decide import Decider
from backend.engine import ScoringEngine
from backend.errors import BackendRefusal, error_body
from backend.loading import LoadedModel, load_model
from backend.scoring import Scorer
from translators.json_depth import nesting_exceeds

ROUTES = {
    "/v1/decisions": routes_decisions.decisions,
    "/v1/systemone": systemone.systemone,
    "/v1/score": routes_decisions.score,
}


class DecisionService:
    def __init__(self, loaded: LoadedModel, *, max_queued_rows: int = 1024, max_batch_tokens: int | None = None,
                 scorer: Scorer | None = None):
        self.loaded = loaded
        self.scorer = scorer or Scorer(loaded.model, loaded.device, max_batch_tokens=max_batch_tokens)
        self.engine = ScoringEngine(self.scorer, max_queued_rows=max_queued_rows)
        self.decider = Decider(loaded, self.engine)

    @classmethod
    def load(cls, model_ref: str = "default", *, device: str | None = None, dtype: str | None = None,
             **options: Any) -> DecisionService:
        return cls(load_model(model_ref, device=device, dtype=dtype), **options)

    async def handle(self, path: str, body: Any) -> tuple[int, dict, dict[str, str]]:
        """(status, JSON body, extra headers) for a POST of ``body`` to ``path``."""
        handler = ROUTES.get(path.rstrip("/") or "/")
        if handler is None:
            return 404, error_body(BackendRefusal(f"no route {path}; this backend serves {sorted(ROUTES)}", 404)), {}
        try:
            return 200, await handler(self.decider, body), {}
        except BackendRefusal as err:
            return err.status, error_body(err), dict(err.headers)

    def close(self) -> None:
        self.engine.close()
        self.decider.close()


MAX_JSON_DEPTH = 64  # the gateway's default max_json_depth


def parse_json(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON of a request body; nesting deeper than ``max_depth`` is refused before parsing
    (``json.loads`` recurses per level: 10,000 nested arrays were a RecursionError, a 500)."""
    if nesting_exceeds(raw, max_depth):
        raise BackendRefusal(f"the body nests arrays and objects more than {max_depth} levels deep "
                             f"(the nesting limit is {max_depth}); send a flatter body")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise BackendRefusal(f"the body is not valid JSON: {err}") from None
    except RecursionError:
        raise BackendRefusal(f"the body nests too deeply (the nesting limit is {max_depth})") from None

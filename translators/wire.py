"""The one interface of a wire module (``translators.openai``, ``translators.systemone``): the caller's
half (parse a request, render an answer or an error, spell a neutral location) and the upstream's
half (render a request for an upstream of this wire, read its answer)."""

from __future__ import annotations

from typing import Any, Protocol

from translators.errors import DecisionError, Loc, Where
from translators.ir import DecisionRequest, DecisionResult
from translators.limits import RequestLimits


class WireModule(Protocol):
    def parse_request(self, body: Any, limits: RequestLimits | None = None,
                      parts: dict[str, tuple[str, bytes]] | None = None) -> DecisionRequest: ...

    def render_response(self, result: DecisionResult, req: DecisionRequest) -> dict[str, Any]: ...

    def render_error(self, err: DecisionError) -> tuple[int, dict[str, Any]]: ...

    def locate(self, where: Where) -> Loc: ...

    def render_request(self, req: DecisionRequest, model: str) -> dict[str, Any]: ...

    def parse_response(self, body: Any, req: DecisionRequest) -> DecisionResult: ...

"""``local/<name-or-path>``: the bundled backend, in process (no HTTP hop, no key, no network).

Same wire as ``sglang/``; the URL ``local://<model-ref>/v1/decisions`` tells the gateway's upstream
layer to call ``backend.inprocess.call``. ``smollm2`` / ``default`` is the bundled SmolLM2-135M; any
other reference is a Hugging Face folder or a ``.gguf`` file. The prompt format is not pinned unless
the deployment sets ``prompt_format_version`` (the backend serves 1, or 2 for a decider checkpoint).

What SGLang's ``/v1/decisions`` wire cannot carry but System One allows (a question without text, an
empty state, a choice of 1 or more than 26 options, a score of 1 level) goes to the backend's own
``/v1/systemone`` route instead, which scores it the same way and reports ``x_label_mass``.
"""

from __future__ import annotations

from typing import ClassVar
from urllib.parse import quote

from providers.base import Deployment, Limits, UpstreamRequest, UpstreamResponse
from providers.sglang import SGLangProvider
from providers.upstream_errors import decode_body, unusable_body, upstream_error
from translators import systemone as systemone_wire
from translators.errors import UpstreamError
from translators.ir import DecisionRequest, DecisionResult
from translators.sglang import is_blank

SYSTEMONE_PATH = "/v1/systemone"


def fits_decisions_wire(req: DecisionRequest) -> bool:
    """Whether every question (and the input) is within SGLang's /v1/decisions rules."""
    if is_blank(req.input.state):
        return False
    for q in req.questions:
        if q.kind == "box":
            return True  # the /v1/decisions renderer refuses it with a clear message
        if is_blank(q.instructions) or q.instructions == []:
            return False
        if q.kind == "choice" and not 2 <= len(q.options) <= 26:
            return False
        if q.kind == "score" and len(q.levels) < 2:
            return False
    return True


class LocalProvider(SGLangProvider):
    name: ClassVar[str] = "local"
    label: ClassVar[str] = "local backend"
    api_key_envs: ClassVar[tuple[str, ...]] = ()
    api_base_envs: ClassVar[tuple[str, ...]] = ()
    default_prompt_format_version: ClassVar[int | None] = None
    # Choices beyond 26 options get two-letter labels, each checked to be one token for the served model.
    limits: Limits = Limits(max_questions=256, min_options=1, max_options=255, min_levels=1, max_levels=10,
                            max_images=0, box=False)

    def url(self, dep: Deployment, path: str | None = None) -> str:
        return f"local://{quote(dep.model or 'default', safe='')}{path or self.path}"

    def headers(self, dep: Deployment) -> dict[str, str]:
        return {"Content-Type": "application/json"}

    def build_request(self, req: DecisionRequest, dep: Deployment) -> UpstreamRequest:
        if fits_decisions_wire(req):
            return super().build_request(req, dep)
        body = systemone_wire.render_request(req, dep.model)
        return UpstreamRequest(method="POST", url=self.url(dep, SYSTEMONE_PATH), headers=self.headers(dep),
                               json=body, timeout=dep.timeout)

    def parse_response(self, resp: UpstreamResponse, req: DecisionRequest, dep: Deployment) -> DecisionResult:
        if fits_decisions_wire(req):
            return super().parse_response(resp, req, dep)
        payload = decode_body(resp.body)
        if resp.status != 200:
            raise upstream_error(self.name, resp, label=self.label, payload=payload)
        try:
            return systemone_wire.parse_response(payload, req)
        except UpstreamError as err:
            raise unusable_body(self.name, err.message, label=self.label) from None

"""Self-hosted decision servers: Laya (``laya-serve``) and Bespoke Nimble, System One at ``{base}/v1/systemone``.

The base comes from the deployment or ``LAYA_API_BASE`` / ``BESPOKE_API_BASE``. The key from the
environment is sent only to the environment's own base, so a caller-supplied ``api_base`` cannot
collect it. Laya's answers are reduced to the Jev contract: its entropy ``confidence`` is replaced
by the Jev value it sends as ``x_jev_confidence`` (or dropped, so normalisation recomputes it),
and its extensions (``routing``, ``answer_confidence``, ``action``, ``abstention``, usage extras)
are stripped. A Nimble server on Modal takes the deployment's ``modal_key`` / ``modal_secret`` as
``Modal-Key`` / ``Modal-Secret`` headers (kept out of error messages like any key).
"""

from __future__ import annotations

from typing import Any

from providers.base import Deployment, Limits
from providers.http_json import HttpJsonProvider
from translators.ir import DecisionRequest

ANSWER_FIELDS = {
    "noul": ("type", "noul"),
    "choice": ("type", "choice", "probabilities", "confidence"),
    "score": ("type", "score", "probabilities", "confidence", "legend"),
    "box": ("type", "box", "confidence"),
}
USAGE_FIELDS = ("input_tokens", "output_tokens")


class SelfHostedProvider(HttpJsonProvider):
    api_key_required = False
    env_key_for_env_base_only = True


class LayaProvider(SelfHostedProvider):
    name = "laya"
    label = "Laya"
    api_key_envs = ("LAYA_API_KEY",)
    api_base_envs = ("LAYA_API_BASE",)
    limits = Limits(max_questions=None, min_options=1, min_levels=1, max_images=0, box=False)

    def clean(self, payload: dict[str, Any], req: DecisionRequest) -> dict[str, Any]:
        return jev_strict(payload)


class BespokeProvider(SelfHostedProvider):
    name = "bespoke"
    label = "Bespoke Nimble"
    api_key_envs = ("BESPOKE_API_KEY",)
    api_base_envs = ("BESPOKE_API_BASE",)
    known_params = frozenset({"modal_key", "modal_secret"})
    limits = Limits(
        max_questions=64, min_options=2, max_options=26, min_levels=2, max_levels=26,
        max_images=0, max_context_tokens=8_192, box=False,
    )
    modal_headers = {"modal_key": "Modal-Key", "modal_secret": "Modal-Secret"}

    def request_headers(self, req: DecisionRequest, dep: Deployment) -> dict[str, str]:
        params = dep.params or {}
        return {header: str(params[key]) for key, header in self.modal_headers.items() if params.get(key)}

    def secrets(self, dep: Deployment) -> tuple[str | None, ...]:
        params = dep.params or {}
        return (*super().secrets(dep), *(str(params[key]) for key in self.modal_headers if params.get(key)))


def jev_strict(payload: dict[str, Any]) -> dict[str, Any]:
    """A Laya response reduced to the plain System One / Jev contract (answers that are not an object
    are left for the translator to refuse)."""
    answers = payload.get("answers")
    if isinstance(answers, dict):
        answers = {key: jev_answer(answer) if isinstance(answer, dict) else answer for key, answer in answers.items()}
    out: dict[str, Any] = {"model": payload.get("model"), "answers": answers}
    usage = payload.get("usage")
    if isinstance(usage, dict):
        out["usage"] = {k: usage[k] for k in USAGE_FIELDS if k in usage}
    return out


def jev_answer(answer: dict[str, Any]) -> dict[str, Any]:
    kind = answer.get("type")
    keep = ANSWER_FIELDS.get(kind) if isinstance(kind, str) else None
    if keep is None:
        return answer
    out = {k: answer[k] for k in keep if k in answer}
    if kind in ("choice", "score"):
        jev = answer.get("x_jev_confidence")
        if isinstance(jev, (int, float)) and not isinstance(jev, bool):
            out["confidence"] = jev
        else:
            out.pop("confidence", None)  # entropy confidence: let normalisation compute Jev's
    return out

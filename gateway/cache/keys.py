"""Canonical cache keys: who answers, about what, which question; the same on both wires.

An entry's key is ``<namespace>a:<sha256(deployment identity | input | question)>``:

- the **deployment identity**: provider, upstream model, ``api_base`` and every ``litellm_params``
  entry that may change an answer (``temperature``, ``prompt_format_version`` with the provider's
  default, a checkpoint, headers...), never a credential (``api_key``, any parameter or header whose
  name says key, secret, token, password or auth) nor what only changes how a call is made or paid
  (timeouts, retries, hedging, prices, rate limits, weights, limits). Two deployments with the same
  identity share entries, in whatever group they are.
- the **input** as System One sees it (``DecisionInput.state``; an OpenAI text input is that
  string), each image reference replaced by the SHA-256 of the image's bytes (or its URL), plus
  the roles of an OpenAI input list unless it is one user message, and the forwarded
  ``TypeSafe-Danger-Zone-*`` headers.
- the **question** in IR form: kind, instructions, options (System One text and description), levels,
  criteria and provider extras; never its id or name, so ``tone`` on ``/v1/systemone`` and the
  question named ``tone`` (or unnamed) on ``/v1/decisions`` are one entry.

- the **scope**: who may read the entry (``cache_params.scope``): the team that paid for it (the key,
  when it has no team), the key, or everyone (``global``: the input's digest alone, as before scopes).

All of it as canonical JSON (orjson, sorted keys), hashed. The answering model version of each
deployment lives at ``<namespace>v:<identity>`` (shared: it says which model answers, not what).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

from providers.base import Deployment
from providers.registry import get_provider
from translators.errors import DecisionError
from translators.ir import DecisionRequest, Image, Question

FORMAT = 1  # bumped when what a key covers, or an entry's layout, changes
SECRET_WORDS = ("key", "secret", "token", "password", "auth", "cookie", "credential")
# litellm_params that change how a call is made, routed or priced, never what it answers.
NOT_ANSWERING = frozenset({
    "timeout", "stream_timeout", "max_retries", "num_retries", "hedge_after_ms", "input_cost_per_token",
    "output_cost_per_token", "input_cost_per_second", "output_cost_per_second", "cache_read_input_token_cost",
    "cache_creation_input_token_cost", "input_cost_per_query", "cost_per_request", "rpm", "tpm",
    "max_parallel_requests", "weight", "order", "tags", "budget_duration", "max_budget", "litellm_trace_id",
    "use_in_pass_through", "limits", "max_questions", "max_options", "max_levels", "max_images",
    "max_context_tokens", "supports_images", "mock_response",
})


def canonical(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, compact (orjson; the stdlib for what orjson refuses)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an int over 64 bits, a lone surrogate
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                          default=str).encode("utf-8", "surrogatepass")


def digest(value: Any) -> bytes:
    return hashlib.sha256(canonical(value)).digest()


def _secret(name: Any) -> bool:
    lowered = str(name).lower()
    return any(word in lowered for word in SECRET_WORDS)


def _headers(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return {str(k).lower(): v for k, v in value.items() if not _secret(k)}


def deployment_identity(dep: Deployment) -> str:
    """The hex identity of what answers through ``dep`` (see the module docstring)."""
    params: dict[str, Any] = {}
    for name, value in dep.params.items():
        if name in NOT_ANSWERING or _secret(name):
            continue
        if name in ("headers", "extra_headers"):
            value = _headers(value)
            if not value:
                continue
        params[name] = value
    try:
        default_format = getattr(get_provider(dep.provider), "default_prompt_format_version", None)
    except DecisionError:  # an unknown provider: the route refuses it before any cache step
        default_format = None
    if default_format is not None:
        params.setdefault("prompt_format_version", default_format)
    identity = {"format": FORMAT, "provider": dep.provider, "model": dep.model,
                "api_base": (dep.api_base or "").rstrip("/"), "params": params}
    return digest(identity).hex()


def image_token(image: Image) -> str:
    """What stands for an image in a key: its bytes' hash (or its URL), and OpenAI's detail when given."""
    source = "sha256:" + hashlib.sha256(image.data).hexdigest() if image.data is not None else f"url:{image.url}"
    return f"<image {source}{' ' + image.detail if image.detail else ''}>"


def replace_refs(value: Any, tokens: dict[str, str]) -> Any:
    """``value`` with every image ref in its strings (and keys) replaced by its token."""
    if not tokens:
        return value
    if isinstance(value, str):
        for ref, token in tokens.items():
            if ref in value:
                value = value.replace(ref, token)
        return value
    if isinstance(value, dict):
        return {replace_refs(str(k), tokens): replace_refs(v, tokens) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [replace_refs(v, tokens) for v in value]
    return value


def image_tokens(req: DecisionRequest) -> dict[str, str]:
    """ref -> token for the request's images, longest ref first (so no ref is replaced inside another)."""
    images = req.input.images
    if not images:
        return {}
    return {ref: image_token(images[ref]) for ref in sorted(images, key=len, reverse=True)}


def input_digest(req: DecisionRequest, tokens: dict[str, str]) -> bytes:
    """The SHA-256 of the canonical input (see the module docstring)."""
    decision_input = req.input
    canon: list[Any] = [replace_refs(decision_input.state, tokens)]
    messages = decision_input.messages
    if messages is not None:
        roles = [m.get("role", "user") if isinstance(m, dict) else None for m in messages]
        if roles != ["user"]:
            canon.append(roles)
    if req.headers:
        canon.append(sorted((k.lower(), v) for k, v in req.headers.items()))
    return digest(canon)


def scope_of(scope: str, caller: Any) -> str:
    """Who shares entries with ``caller`` (a ``gateway.auth`` ``Identity``, or None for the Python API)
    under ``cache_params.scope``: ``""`` for ``global``; else ``team:<id>`` or ``key:<hash>``
    (``anonymous``: an open gateway's one caller)."""
    if scope == "global":
        return ""
    team_id = getattr(caller, "team_id", None)
    if scope == "team" and team_id:
        return f"team:{team_id}"
    key_hash = getattr(caller, "key_hash", None)
    return f"key:{key_hash}" if key_hash else "anonymous"


def scoped(input_sha: bytes, scope: str) -> bytes:
    """The input's digest within a scope (``""``, global: the digest itself)."""
    return hashlib.sha256(b"scope\x00" + scope.encode() + b"\x00" + input_sha).digest() if scope else input_sha


def question_digest(question: Question, tokens: dict[str, str]) -> bytes:
    """The SHA-256 of the canonical question: everything but its id and name."""
    canon = [question.kind, replace_refs(question.instructions, tokens),
             [[option.key, replace_refs(option.description, tokens)] for option in question.options],
             [[replace_refs(level.label, tokens), level.description] for level in question.levels],
             replace_refs(question.criteria, tokens), question.extra]
    return digest(canon)


def entry_key(namespace: str, identity: str, input_sha: bytes, question_sha: bytes) -> str:
    return namespace + "a:" + hashlib.sha256(identity.encode() + input_sha + question_sha).hexdigest()


def version_key(namespace: str, identity: str) -> str:
    return namespace + "v:" + identity

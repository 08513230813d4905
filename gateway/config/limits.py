"""Limits and hardening settings: the ``general_settings`` keys that bound what a client or an upstream may send.

    general_settings:
      max_request_body_bytes: 16777216     # a request body, as sent and once decompressed (413 beyond)
      max_json_depth: 64                   # nesting of arrays and objects in a JSON body (400 beyond)
      max_multipart_parts: 64              # parts of a multipart/form-data body (400 beyond)
      max_multipart_part_bytes: 8388608    # bytes of one multipart part (413 beyond)
      max_upstream_response_bytes: 16777216  # an upstream answer once decompressed (502 beyond)
      request_read_timeout_s: 30           # the whole request body must arrive within this (408)
      request_header_timeout_s: 10         # the request line and headers must arrive within this (closed)
      keep_alive_timeout_s: 5              # an idle kept-alive connection is closed after this
      max_concurrent_heavy_decodes: 4      # compressed, multipart or large bodies decoded at once, off the loop
      max_concurrent_connections: 1024     # uvicorn's limit_concurrency: beyond it new requests answer 503

``limits_from_settings(general_settings) -> LimitsSettings`` checks every value (a positive number of
the right kind) and raises ``ValueError`` naming the key; ``limits_problems`` lists every bad one, which
gateway/config/loader.py turns into a ``ConfigError``. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

MIB = 1024 * 1024


@dataclass(frozen=True)
class LimitsSettings:
    max_request_body_bytes: int = 16 * MIB
    max_json_depth: int = 64
    max_multipart_parts: int = 64
    max_multipart_part_bytes: int = 8 * MIB
    max_upstream_response_bytes: int = 16 * MIB
    request_read_timeout_s: float = 30.0
    request_header_timeout_s: float = 10.0
    keep_alive_timeout_s: float = 5.0
    max_concurrent_heavy_decodes: int = 4
    max_concurrent_connections: int = 1024


DEFAULT_LIMITS_SETTINGS = LimitsSettings()
SETTING_NAMES = frozenset(f.name for f in fields(LimitsSettings))


def limits_from_settings(general: Mapping[str, Any] | None) -> LimitsSettings:
    """The limits named in ``general_settings`` (the others keep their defaults)."""
    values: dict[str, Any] = {}
    for f in fields(LimitsSettings):
        if general is None or general.get(f.name) is None:
            continue
        values[f.name] = _positive(f.name, general[f.name], float if f.name.endswith("_s") else int)
    return LimitsSettings(**values)


def limits_problems(general: Mapping[str, Any] | None) -> list[str]:
    """Every unusable limit of ``general_settings``, each ``<key>: <rule>, got <value>``."""
    out = []
    for f in fields(LimitsSettings):
        try:
            limits_from_settings({f.name: (general or {}).get(f.name)})
        except ValueError as exc:
            out.append(str(exc))
    return out


def _positive(name: str, value: Any, kind: type) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name}: expected a positive {'number of seconds' if kind is float else 'integer'}, "
                         f"got {value!r}")
    if not 0 < value < float("inf"):
        raise ValueError(f"{name}: must be positive and finite, got {value!r}")
    if kind is int and value != int(value):
        raise ValueError(f"{name}: expected a positive integer, got {value!r}")
    return kind(value)

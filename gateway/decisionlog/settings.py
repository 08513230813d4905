"""The decision log's and calibration's settings, read once at start; the narrowest setting wins.

    general_settings:
      decision_log:
        capture: none | digest | full     # the input kept with each decision (default digest)
        full_retention: 7d                # how long a full capture is kept (default 7d;
                                          # ``decisions-gateway decision-log purge`` deletes older ones)
        sites: {refund: 3f2a...}          # named sites: the metrics' ``site`` label (bounded: only these)
      calibration: apply | off            # answers calibrated where a calibrator is fitted (default off)
    model_list[i].model_info:
      decision_log: {capture: full}       # per model group
      calibration: apply | off
    a key's or team's metadata:
      decision_log: {capture: none}       # the key's wins over its team's, which wins over the group's
      calibration: apply | off
    a request: x-decisions-calibration: apply | off   (wins over all of them)

``digest`` keeps ``sha256:<hex>`` of the input (the state, messages and images as the cache keys
them), so the same input can be found again without keeping it; ``full`` keeps the input itself
(up to 64 KiB) in ``decision_inputs``; ``none`` neither. The probabilities, the answer and the
question's site are logged at every level: they are what outcomes and calibration need. A key's or
team's metadata value that is not one of these words is ignored (the next level decides); the
config's are checked at start (``ConfigError`` naming the key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gateway.config.errors import ConfigError
from providers.base import Deployment

Capture = Literal["none", "digest", "full"]
CAPTURES: tuple[Capture, ...] = ("none", "digest", "full")
CALIBRATION_HEADER = "x-decisions-calibration"
APPLY_WORDS = {"apply": True, "on": True, "true": True, "off": False, "false": False}
DEFAULT_RETENTION_S = 7 * 86_400.0
SITE_HEX = 32


@dataclass(frozen=True)
class GroupDecisionLog:
    capture: Capture | None = None  # model_info.decision_log.capture
    calibrate: bool | None = None  # model_info.calibration


@dataclass(frozen=True)
class DecisionLogSettings:
    capture: Capture = "digest"
    full_retention_s: float = DEFAULT_RETENTION_S
    calibrate: bool = False  # general_settings.calibration
    sites: Mapping[str, str] = field(default_factory=dict)  # site -> its configured name
    groups: Mapping[str, GroupDecisionLog] = field(default_factory=dict)

    def capture_for(self, group: str | None, key_meta: Mapping[str, Any] | None,
                    team_meta: Mapping[str, Any] | None) -> Capture:
        for meta in (key_meta, team_meta):
            found = capture_of(meta)
            if found is not None:
                return found
        own = self.groups.get(group or "")
        return own.capture if own is not None and own.capture is not None else self.capture

    def calibrate_for(self, group: str | None, key_meta: Mapping[str, Any] | None,
                      team_meta: Mapping[str, Any] | None, header: str | None) -> bool:
        if header is not None:
            return bool(APPLY_WORDS[header])
        for meta in (key_meta, team_meta):
            if meta:
                found = apply_of(meta.get("calibration"))
                if found is not None:
                    return found
        own = self.groups.get(group or "")
        return own.calibrate if own is not None and own.calibrate is not None else self.calibrate


def capture_of(meta: Mapping[str, Any] | None) -> Capture | None:
    """``metadata.decision_log.capture`` of a key or team, None when unset or not one of the words."""
    section = meta.get("decision_log") if meta else None
    value = section.get("capture") if isinstance(section, Mapping) else None
    return value if isinstance(value, str) and value in CAPTURES else None


def apply_of(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return APPLY_WORDS.get(value.strip().lower())
    return None


def read_header(value: str | None) -> str | None:
    """``x-decisions-calibration`` as sent: None when absent; ``ValueError`` for a word it does not take."""
    if value is None:
        return None
    word = value.strip().lower()
    if word not in APPLY_WORDS:
        raise ValueError(f"{CALIBRATION_HEADER} takes apply or off, not {value.strip()[:40]!r}")
    return word


def decision_log_settings(general: Mapping[str, Any], deployments: Sequence[Deployment]) -> DecisionLogSettings:
    """The settings from the config (``ConfigError`` naming the key for a bad value)."""
    section = general.get("decision_log") or {}
    if not isinstance(section, Mapping):
        raise ConfigError("general_settings.decision_log: must be a mapping (capture, full_retention, sites)")
    unknown = set(section) - {"capture", "full_retention", "sites"}
    if unknown:
        raise ConfigError(f"general_settings.decision_log: unknown keys {sorted(unknown)}; it takes capture, "
                          "full_retention and sites")
    capture = _capture(section.get("capture", "digest"), "general_settings.decision_log.capture")
    retention = _retention(section.get("full_retention"))
    sites = _sites(section.get("sites") or {})
    calibrate = _apply(general.get("calibration", "off"), "general_settings.calibration")
    groups: dict[str, GroupDecisionLog] = {}
    for dep in deployments:
        where = f"model_info of model group {dep.model_name!r}"
        own = dep.model_info.get("decision_log")
        if own is not None and not isinstance(own, Mapping):
            raise ConfigError(f"{where}: decision_log must be a mapping like {{capture: full}}")
        group_capture = _capture(own["capture"], f"{where}: decision_log.capture") if own and "capture" in own \
            else None
        switch = dep.model_info.get("calibration")
        group_apply = _apply(switch, f"{where}: calibration") if switch is not None else None
        known = groups.get(dep.model_name, GroupDecisionLog())
        groups[dep.model_name] = GroupDecisionLog(known.capture or group_capture,
                                                  known.calibrate if known.calibrate is not None else group_apply)
    return DecisionLogSettings(capture, retention, calibrate, sites, groups)


def _capture(value: Any, where: str) -> Capture:
    if value not in CAPTURES:
        raise ConfigError(f"{where}: must be one of none, digest, full, got {value!r}")
    return value


def _apply(value: Any, where: str) -> bool:
    found = apply_of(value)
    if found is None:
        raise ConfigError(f"{where}: must be apply or off, got {value!r}")
    return found


def _retention(value: Any) -> float:
    if value is None:
        return DEFAULT_RETENTION_S
    try:
        return retention_seconds(str(value))
    except ValueError as exc:
        raise ConfigError(f"general_settings.decision_log.full_retention: {exc}") from None


def retention_seconds(text: str) -> float:
    """A retention (LiteLLM's durations: 12h, 7d, 1mo as 30 days) in seconds; ``ValueError`` otherwise."""
    from gateway.auth.durations import parse_duration

    duration = parse_duration(text)
    seconds = duration.seconds
    return float(seconds if seconds is not None else (duration.calendar_months or 1) * 30 * 86_400)


def _sites(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError("general_settings.decision_log.sites: must be a mapping of names to sites")
    out: dict[str, str] = {}
    for name, site in value.items():
        if not isinstance(site, str) or len(site) != SITE_HEX or any(c not in "0123456789abcdef" for c in site):
            raise ConfigError(f"general_settings.decision_log.sites.{name}: must be a site, {SITE_HEX} lowercase "
                              "hex characters (GET /calibration/report lists them)")
        out[site] = str(name)
    return out

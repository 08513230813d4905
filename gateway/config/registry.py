"""The model registry: the one owner of model groups and their deployments.

Built once from the config at start (credentials were resolved there, once, with errors naming the
entry), or from ad-hoc ``provider/model`` names for the Python API. ``/v1/models``, the decision
routes, the pass-throughs and the Python API ask it; the router (a later step of the pipeline)
chooses among a group's deployments.

It also owns LiteLLM's ``router_settings.model_group_alias``: another name for a group, written
``{alias: group}`` or ``{alias: {model: group, hidden: true}}``. A request naming an alias answers as
its group (``resolve``); ``/v1/models`` lists the aliases that are not hidden. An alias names a
configured group (aliases do not chain) and is not itself a group's name: both are checked at start.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gateway.config.credentials import not_configured
from providers.base import Deployment, Limits
from providers.limits import limits_for
from providers.registry import adhoc_deployment, get_provider, resolve
from translators.errors import MODEL, RequestInvalid

ALIAS_SETTING = "router_settings.model_group_alias"
ALIAS_FIELDS = frozenset({"model", "hidden"})


@dataclass(frozen=True, slots=True)
class Alias:
    """A ``model_group_alias`` entry: the group it answers as; hidden ones are left out of ``/v1/models``."""

    target: str
    hidden: bool = False


def model_group_aliases(raw: Any, groups: Collection[str]) -> dict[str, Alias]:
    """``router_settings.model_group_alias`` checked against the configured ``groups``; a ``ValueError``
    naming the entry and the rule for anything unusable."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{ALIAS_SETTING}: must be a mapping of alias -> model group, like {{gpt-4: luna}} or "
                         "{gpt-4: {model: luna, hidden: true}}")
    aliases: dict[str, Alias] = {}
    for name, entry in raw.items():
        where = f"{ALIAS_SETTING}.{name}"
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{ALIAS_SETTING}: an alias must be a non-empty string, got {name!r}")
        if isinstance(entry, Mapping):
            unknown = sorted(str(k) for k in entry if k not in ALIAS_FIELDS)
            if unknown:
                raise ValueError(f"{where}: unknown key '{unknown[0]}'; an alias entry has model and hidden")
            target, hidden = entry.get("model"), entry.get("hidden", False)
            if not isinstance(hidden, bool):
                raise ValueError(f"{where}.hidden: must be true or false, got {hidden!r}")
            where = f"{where}.model"
        else:
            target, hidden = entry, False
        if not isinstance(target, str) or not target:
            raise ValueError(f"{where}: must name a model group (a model_name in model_list), got {target!r}")
        if name in groups:
            raise ValueError(f"{ALIAS_SETTING}: '{name}' is already a model_name in model_list; an alias must be "
                             "a name of its own")
        if target not in groups:
            why = " (aliases do not chain: name the group itself)" if target in raw else ""
            raise ValueError(f"{where}: '{target}' is not a model_name in model_list{why}")
        aliases[name] = Alias(target, hidden)
    return aliases


class ModelRegistry:
    """Model groups (``model_name`` -> deployments, in config order), looked up in O(1), and their
    aliases (``model_group_alias``)."""

    def __init__(self, deployments: Iterable[Deployment], *, allow_adhoc: bool = False,
                 environ: Mapping[str, str] | None = None, aliases: Mapping[str, Any] | None = None,
                 unconfigured: Mapping[str, str] | None = None):
        groups: dict[str, list[Deployment]] = {}
        for dep in deployments:
            groups.setdefault(dep.model_name, []).append(dep)
        self._groups: Mapping[str, tuple[Deployment, ...]] = MappingProxyType(
            {name: tuple(deps) for name, deps in groups.items()})
        self.deployments: tuple[Deployment, ...] = tuple(dep for deps in self._groups.values() for dep in deps)
        self.names: tuple[str, ...] = tuple(self._groups)
        self._listing = ", ".join(self.names) or "(none configured)"
        self.allow_adhoc = allow_adhoc
        self._environ = os.environ if environ is None else environ
        # deployments without their provider key (general_settings.allow_missing_keys): id -> the problem
        ids = {dep.id for dep in self.deployments}
        self.unconfigured: Mapping[str, str] = MappingProxyType(
            {dep_id: why for dep_id, why in (unconfigured or {}).items() if dep_id in ids})
        self.aliases: Mapping[str, Alias] = MappingProxyType(model_group_aliases(aliases, self._groups))
        # The names /v1/models lists: the groups, then the aliases not hidden (a hidden one still answers).
        self.listed: tuple[str, ...] = (*self.names, *(a for a, entry in self.aliases.items() if not entry.hidden))

    @classmethod
    def from_config(cls, config) -> ModelRegistry:
        """The registry of a ``GatewayConfig`` (its deployments are resolved already)."""
        return cls(config.deployments, aliases=(config.router_settings or {}).get("model_group_alias"),
                   unconfigured=getattr(config, "unconfigured", None))

    @classmethod
    def adhoc(cls, deployment: Deployment, environ: Mapping[str, str] | None = None) -> ModelRegistry:
        """A one-deployment registry for the Python API: keys and bases resolved from ``environ`` now."""
        return cls([resolve(deployment, os.environ if environ is None else environ)])

    # ---- lookup ----------------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self._groups

    def knows(self, name: object) -> bool:
        """Whether ``name`` is a configured group or an alias of one."""
        return name in self._groups or name in self.aliases

    def resolve(self, name: str) -> str:
        """The group a requested name answers as: an alias's target, any other name itself."""
        alias = self.aliases.get(name)
        return alias.target if alias is not None else name

    def usable(self, allowed: Collection[str] | None) -> list[str]:
        """The listed names a caller whose models are ``allowed`` (None: every one) may call: a group in
        them, or an alias of one (LiteLLM lets a key that may use a group call its aliases too)."""
        return [name for name in self.listed
                if allowed is None or name in allowed or self.resolve(name) in allowed]

    def group(self, name: str) -> tuple[Deployment, ...]:
        """The deployments of a model group, empty for an unknown name."""
        return self._groups.get(name, ())

    def require_group(self, name: str) -> tuple[Deployment, ...]:
        """The deployments of a configured group (or one ad-hoc ``provider/model`` when allowed)."""
        group = self._groups.get(name)
        if group:
            return group
        if self.allow_adhoc and "/" in (name or ""):
            return (resolve(adhoc_deployment(name), self._environ),)
        raise RequestInvalid(f"Unknown model '{name}': the configured models are {self._listing}.", loc=MODEL,
                             code="model_not_found")

    def configured(self, name: str) -> tuple[Deployment, ...]:
        """``require_group`` without the deployments that lack their provider key; when every one lacks
        it, the 503 naming the deployment and the setting (gateway/config/credentials.py)."""
        group = self.require_group(name)
        if not self.unconfigured:
            return group
        ready = tuple(dep for dep in group if dep.id not in self.unconfigured)
        if ready:
            return ready
        raise not_configured(group[0], self.unconfigured[group[0].id])

    def deployment_for(self, name: str) -> Deployment:
        """The first deployment of a group (for callers that need one, such as the pass-throughs)."""
        return self.require_group(name)[0]

    @property
    def listing(self) -> str:
        """The configured model names, for error messages."""
        return self._listing

    def local_model_refs(self) -> list[str]:
        """The ``local/`` models to load at start-up."""
        return list(dict.fromkeys(dep.model for dep in self.deployments if dep.provider == "local"))

    @staticmethod
    def limits(dep: Deployment) -> Limits:
        """A deployment's limits: its provider's, with the deployment's overrides."""
        return limits_for(get_provider(dep.provider).limits, dep)

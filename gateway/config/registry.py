"""The model registry: the one owner of model groups and their deployments.

Built once from the config at start (credentials were resolved there, once, with errors naming the
entry), or from ad-hoc ``provider/model`` names for the Python API. ``/v1/models``, the decision
routes, the pass-throughs and the Python API ask it; the router (a later step of the pipeline)
chooses among a group's deployments.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from providers.base import Deployment, Limits
from providers.limits import limits_for
from providers.registry import adhoc_deployment, get_provider, resolve
from translators.errors import MODEL, RequestInvalid


class ModelRegistry:
    """Model groups (``model_name`` -> deployments, in config order), looked up in O(1)."""

    def __init__(self, deployments: Iterable[Deployment], *, allow_adhoc: bool = False,
                 environ: Mapping[str, str] | None = None):
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

    @classmethod
    def from_config(cls, config) -> ModelRegistry:
        """The registry of a ``GatewayConfig`` (its deployments are resolved already)."""
        return cls(config.deployments)

    @classmethod
    def adhoc(cls, deployment: Deployment, environ: Mapping[str, str] | None = None) -> ModelRegistry:
        """A one-deployment registry for the Python API: keys and bases resolved from ``environ`` now."""
        return cls([resolve(deployment, os.environ if environ is None else environ)])

    # ---- lookup ----------------------------------------------------------------------------

    def __contains__(self, name: object) -> bool:
        return name in self._groups

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

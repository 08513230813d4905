"""The ``local/`` models of the running gateway, each with its state: ``loading``, ``loaded`` or ``failed``.

They are loaded one after the other in the background from the start (``warm``); readiness waits
for the warm-up and names each model with its state and, for a failed one, the reason. A reload
(gateway/reload.py) warms the models the new config adds before it swaps the config in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from gateway.upstream.upstream import warm_local_models

LocalState = Literal["loading", "loaded", "failed"]


class LocalModels:
    def __init__(self) -> None:
        self.states: dict[str, LocalState] = {}
        self.errors: dict[str, str] = {}

    async def warm(self, refs: Iterable[str]) -> dict[str, str]:
        """Load each model not loaded yet; returns those that failed now, with the reason."""
        todo = [ref for ref in dict.fromkeys(refs) if self.states.get(ref) != "loaded"]
        for ref in todo:
            self.states[ref] = "loading"
            self.errors.pop(ref, None)
        failed: dict[str, str] = {}
        for ref in todo:
            try:
                failed.update(await warm_local_models([ref]))
            except Exception as exc:  # noqa: BLE001 - the backend itself is missing or broken: name it, keep serving
                failed[ref] = f"{type(exc).__name__}: {exc}"
            self.states[ref] = "failed" if ref in failed else "loaded"
            if ref in failed:
                self.errors[ref] = failed[ref]
        return failed

    def report(self, refs: Iterable[str]) -> dict[str, dict[str, str]]:
        """``{ref: {"state": ..., "error": ...}}`` for the configured ``refs`` (``loading`` until tried)."""
        out: dict[str, dict[str, str]] = {}
        for ref in dict.fromkeys(refs):
            entry: dict[str, str] = {"state": self.states.get(ref, "loading")}
            if ref in self.errors:
                entry["error"] = self.errors[ref]
            out[ref] = entry
        return out

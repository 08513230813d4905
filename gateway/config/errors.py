"""The one error of an unusable config, and the collector that gathers every problem of one load.

Below the loader and every feature's settings that raise it. A check raises ``ConfigError`` for its
problem; the loader runs each independent check inside ``Problems.collect()``, so one bad entry does
not hide the next, and raises one ``ConfigError`` listing them all (``problems``) at the end.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

MAX_LISTED_KEYS = 12  # a section with more keys than this is not listed in an unknown-key message


class ConfigError(ValueError):
    """The configuration cannot be used; each problem names its entry (``model_list[1] (jev).litellm_params.
    api_key``) and the rule. ``str()`` is the problem itself when there is one, else a count and one
    problem a line."""

    def __init__(self, problems: str | Sequence[str], source: str | None = None):
        self.problems: list[str] = [problems] if isinstance(problems, str) else list(problems)
        self.source = source
        super().__init__(self.problems[0] if len(self.problems) == 1 else self.summary())

    def summary(self) -> str:
        where = f" in {self.source}" if self.source else ""
        return f"{len(self.problems)} problems{where}:\n" + "\n".join(f"  - {p}" for p in self.problems)


class Problems:
    """The problems of one config load, in the order they were found."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, problem: str) -> None:
        if problem not in self.items:
            self.items.append(problem)

    @contextmanager
    def collect(self) -> Iterator[None]:
        """Run a check: a ``ConfigError`` it raises is recorded (the rest of the block is skipped)."""
        try:
            yield
        except ConfigError as exc:
            for problem in exc.problems:
                self.add(problem)

    def raise_if_any(self, source: str | None = None) -> None:
        if self.items:
            raise ConfigError(self.items, source)

    def __len__(self) -> int:
        return len(self.items)


def unknown_keys(section: Iterable[object], known: Iterable[str], where: str) -> list[str]:
    """One problem per key of ``section`` not in ``known``: ``<where>.<key>: unknown key; did you mean
    'api_key'?`` (difflib's closest known keys), or the known keys when there are few of them."""
    known = sorted(known)
    out = []
    for key in section:
        if key in known:
            continue
        name = str(key)
        shown = name if len(name) <= 80 else name[:80] + "..."
        close = closest(name, known)
        if close:
            hint = "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
        elif len(known) <= MAX_LISTED_KEYS:
            hint = "the keys here are " + ", ".join(known)
        else:
            hint = "no known key is close to it (the README's config reference lists them)"
        out.append(f"{where}.{shown}: unknown key; {hint}" if where else f"{shown}: unknown top-level key; {hint}")
    return out


def closest(name: str, known: list[str]) -> list[str]:
    """The known keys closest to ``name`` (difflib's ratio of at least 0.6), only those about as close as the
    best: ``api_kye`` -> ``api_key``, not ``api_base`` too."""
    scored = []
    for candidate in known:
        matcher = difflib.SequenceMatcher(None, name, candidate)
        if matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6 and matcher.ratio() >= 0.6:
            scored.append((matcher.ratio(), candidate))
    if not scored:
        return []
    best = max(score for score, _ in scored)
    return [c for score, c in sorted(scored, key=lambda sc: -sc[0]) if score >= best - 0.05][:3]

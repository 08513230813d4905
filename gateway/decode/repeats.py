"""A JSON object that repeats a key, marked so that the error can name the key and where it is.

``json.loads(text, object_pairs_hook=marking_repeats)`` builds plain dicts, and a ``Repeated`` for an
object that gave a key more than once. Pure (no web framework): the decision routes' body decoding
and the admin API's strict bodies share it, and the admin CLI imports the latter.
"""

from __future__ import annotations

from typing import Any


class Repeated(dict):
    """An object that repeated a key (only built to name it and its place in the error message)."""

    repeated: str = ""


def marking_repeats(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    marked = Repeated(obj)
    seen: set[str] = set()
    marked.repeated = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
    return marked

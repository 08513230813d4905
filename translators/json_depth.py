"""How deeply a JSON text nests, found before parsing it (pure, no I/O).

``json.loads`` recurses once per level, so 10,000 nested arrays (a 20 KB body) end in a
``RecursionError`` instead of a clear refusal. ``nesting_exceeds(data, limit)`` answers whether the
text opens more than ``limit`` arrays or objects inside one another, at C speed: strings are blanked
out with one regular expression, every bracket is mapped to ``(`` or ``)``, and each
``bytes.replace(b"()", b"")`` pass peels exactly one level. A body with no more openers than the
limit (nearly every real request) is answered by a single ``bytes.count``.

Used by the gateway's body decoder and by the bundled backend's body parser.
"""

from __future__ import annotations

_STRING = None  # compiled on first use: the regex module is cheap, but only deep bodies need it
_OPENERS = (b"[", b"{")
_BRACKETS_ONLY = bytes(range(256)).translate(None, b"[]{}")  # every other byte, to delete
_AS_PARENS = bytes.maketrans(b"[]{}", b"()()")


def nesting_exceeds(data: bytes | str, limit: int) -> bool:
    """Whether ``data`` (a JSON text) nests arrays and objects more than ``limit`` levels deep.

    Brackets inside strings do not count. For text that is not valid JSON the answer is a bound
    (unbalanced openers count as levels); the parser refuses such text anyway.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if sum(raw.count(opener) for opener in _OPENERS) <= limit:
        return False
    brackets = _without_strings(raw).translate(_AS_PARENS, _BRACKETS_ONLY)
    for levels in range(limit):  # peel ``limit`` levels: whatever is left nests deeper
        if not brackets:
            return False
        peeled = brackets.replace(b"()", b"")
        if len(peeled) == len(brackets):  # only ")))(((" is left: each remaining opener is one more level
            return levels + peeled.count(b"(") > limit
        brackets = peeled
    return bool(brackets)


def _without_strings(raw: bytes) -> bytes:
    global _STRING
    if _STRING is None:
        import re

        _STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
    if b'"' not in raw:
        return raw
    return _STRING.sub(b"", raw)

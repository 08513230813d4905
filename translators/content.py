"""Text helpers shared by the wires: JSON to text, OpenAI content parts to text, image-ref search."""

from __future__ import annotations

import json
import re
from typing import Any

from translators.images import image_ref

SEGMENT_SEPARATOR = "\n\n"


def compact_json(value: Any) -> str:
    """A string as is; any other JSON value as compact JSON, non-ASCII kept (SGLang's rendering, and
    how ``input_json`` parts are written into a System One state)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def json_text(value: Any) -> str:
    """A string as is; any other JSON value ``json.dumps``'d with default separators (LiteLLM's rule)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def part_text(part: dict[str, Any]) -> str:
    """The text a single OpenAI content part stands for in System One: text, compact JSON or image ref."""
    kind = part.get("type")
    if kind == "input_text":
        text: str = part.get("text", "")  # a string: the wire schema checked it
        return text
    if kind == "input_json":
        return compact_json(part.get("data"))
    if kind == "input_image":
        return image_ref(part.get("image_url", ""))
    return ""


def content_text(content: str | list[dict[str, Any]]) -> list[str]:
    """Segments of an OpenAI message ``content`` (a string, or a list of parts)."""
    if isinstance(content, str):
        return [content]
    return [part_text(part) for part in content]


def parts_text(parts: list[dict[str, Any]]) -> str:
    """OpenAI question-instruction parts as one text, segments joined with a blank line."""
    return SEGMENT_SEPARATOR.join(part_text(part) for part in parts)


def messages_state(messages: list[dict[str, Any]]) -> str:
    """The System One state of an OpenAI input list: every segment of every message, in order."""
    segments: list[str] = []
    for message in messages:
        segments.extend(content_text(message.get("content", "")))
    return SEGMENT_SEPARATOR.join(segments)


def mentions(value: Any, ref: str) -> bool:
    """Whether ``ref`` occurs in any string (value or key) inside a JSON value."""
    if isinstance(value, str):
        return ref in value
    if isinstance(value, dict):
        return any(ref in str(k) or mentions(v, ref) for k, v in value.items())
    if isinstance(value, list):
        return any(mentions(v, ref) for v in value)
    return False


def split_on_refs(text: str, refs: list[str]) -> list[tuple[str, str]]:
    """Split ``text`` at every occurrence of any ref: [("text", s) | ("image", ref), ...], blank text dropped."""
    if not refs:
        return [("text", text)] if text.strip() else []
    pattern = re.compile("|".join(re.escape(r) for r in sorted(refs, key=len, reverse=True)))
    pieces: list[tuple[str, str]] = []
    position = 0
    for match in pattern.finditer(text):
        before = text[position:match.start()].strip("\n")
        if before.strip():
            pieces.append(("text", before))
        pieces.append(("image", match.group(0)))
        position = match.end()
    rest = text[position:].strip("\n")
    if rest.strip():
        pieces.append(("text", rest))
    return pieces


def without_refs(state: Any, refs: set[str]) -> Any:
    """A text state with its image-ref segments removed (for upstreams that take images apart from the
    state); any other state unchanged."""
    if not isinstance(state, str) or not refs:
        return state
    return SEGMENT_SEPARATOR.join(seg for seg in state.split(SEGMENT_SEPARATOR) if seg.strip() not in refs)

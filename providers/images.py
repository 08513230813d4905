"""Image shapes each upstream takes, built from the IR's ``DecisionInput.images`` (pure)."""

from __future__ import annotations

import base64

from translators.ir import DecisionRequest, Image, JSON


def b64(image: Image) -> str:
    return base64.b64encode(image.data or b"").decode("ascii")


def data_url(image: Image) -> str:
    if image.data is None and image.url:
        return image.url
    return f"data:{image.media_type.lower()};base64,{b64(image)}"


def asset_format(image: Image) -> str:
    fmt = image.format
    return "jpeg" if fmt == "jpg" else fmt


def base64_assets(req: DecisionRequest) -> dict[str, dict]:
    """System One JSON ``assets``: ``{ref: {type, format, data_base64}}`` (no ``data:`` prefix)."""
    return {
        ref: {"type": "image", "format": asset_format(image), "data_base64": b64(image)}
        for ref, image in req.input.images.items()
    }


def without_refs(state: JSON, refs: set[str]) -> JSON:
    """A text state with the image-ref segments (``"\\n\\n"``-separated) removed; other states unchanged."""
    if not isinstance(state, str) or not refs:
        return state
    return "\n\n".join(seg for seg in state.split("\n\n") if seg.strip() not in refs)

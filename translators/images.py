"""Image helpers shared by the wires: refs, data URLs, base64, media-type sniffing. Pure functions."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from urllib.parse import urlsplit

from translators.ir import Image

_DATA_URL = re.compile(r"^data:(image/[A-Za-z0-9.+-]+);base64,(.*)$", re.IGNORECASE | re.DOTALL)
_FORMAT_MEDIA_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp",
                       "gif": "image/gif"}


def image_ref(image_url: str) -> str:
    """The System One ref of an OpenAI ``input_image``: ``image-`` + first 32 hex of sha256(image_url)."""
    return "image-" + hashlib.sha256(image_url.encode("utf-8")).hexdigest()[:32]


def decode_base64(text: str) -> bytes:
    """Strict base64 (standard or URL-safe alphabet, padding optional). Raises ValueError."""
    cleaned = re.sub(r"\s+", "", text).replace("-", "+").replace("_", "/")
    cleaned += "=" * (-len(cleaned) % 4)
    try:
        return base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("is not valid base64") from exc


def parse_data_url(url: str) -> tuple[str, bytes] | None:
    """(media type, bytes) of a ``data:image/...;base64,`` URL; None when ``url`` is not one.
    ValueError on bad base64."""
    match = _DATA_URL.match(url)
    if not match:
        return None
    return match.group(1).lower(), decode_base64(match.group(2))


def is_http_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def media_type_for_format(fmt: str) -> str | None:
    """System One asset ``format`` -> media type (png, jpg/jpeg, webp, gif)."""
    return _FORMAT_MEDIA_TYPES.get(fmt.lower())


def guess_url_media_type(url: str) -> str:
    """Media type from an http(s) URL's file extension; image/png when it has none we know."""
    path = urlsplit(url).path.lower()
    suffix = path.rsplit(".", 1)[-1] if "." in path else ""
    return _FORMAT_MEDIA_TYPES.get(suffix, "image/png")


def sniff_media_type(data: bytes) -> str | None:
    """PNG, JPEG, WebP or GIF from magic bytes; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    return None


def image_from_url(image_url: str, detail: str | None = None) -> Image:
    """IR image of an OpenAI ``input_image.image_url`` (already validated as a data URL or http(s) URL)."""
    ref = image_ref(image_url)
    parsed = parse_data_url(image_url)
    if parsed is not None:
        media_type, data = parsed
        return Image(ref=ref, media_type=media_type, data=data, detail=detail)
    return Image(ref=ref, media_type=guess_url_media_type(image_url), url=image_url, detail=detail)


def data_url(image: Image) -> str:
    """A ``data:`` URL for an inline image (media type in lower case), or its public URL."""
    if image.data is None:
        return image.url or ""
    return f"data:{image.media_type.lower()};base64,{base64_text(image)}"


def base64_text(image: Image) -> str:
    """The image's bytes in standard base64, without a ``data:`` prefix."""
    return base64.b64encode(image.data or b"").decode("ascii")

"""``multipart/form-data`` encoding of a System One request with asset parts (typesafe-sdk's shape)."""

from __future__ import annotations

import json
import uuid
from typing import Any


def encode(request: dict[str, Any], parts: dict[str, tuple[str, bytes]],
           boundary: str | None = None) -> tuple[bytes, str]:
    """(body, content type): a ``request`` JSON part, then one part per asset (name -> (type, bytes))."""
    boundary = boundary or uuid.uuid4().hex
    chunks: list[bytes] = [
        f"--{boundary}\r\n".encode(),
        b'Content-Disposition: form-data; name="request"\r\nContent-Type: application/json\r\n\r\n',
        json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode(),
        b"\r\n",
    ]
    for name, (content_type, data) in parts.items():
        chunks += [
            f"--{boundary}\r\n".encode(),
            f'Content-Disposition: form-data; name="{name}"; filename="{name}"\r\n'.encode(),
            f"Content-Type: {content_type}\r\n\r\n".encode(),
            data,
            b"\r\n",
        ]
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"

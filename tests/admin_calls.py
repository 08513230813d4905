"""The admin API as the tests that make keys and teams call it: the master key, a 200 expected."""

from __future__ import annotations

import httpx


def admin_ok(gateway, master: str, path: str, body: dict) -> dict:
    """``POST path`` with ``body`` as the master key; the JSON answer (the test fails on anything but 200)."""
    response = httpx.post(gateway.url + path, json=body, headers={"Authorization": f"Bearer {master}"}, timeout=20)
    assert response.status_code == 200, response.text
    return response.json()

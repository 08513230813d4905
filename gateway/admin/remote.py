"""The admin CLI's remote mode: each command sent to a running gateway's admin API (``--url``).

``Remote(url, api_key)`` has the operations of ``gateway.admin.direct.Direct`` (the same names, the
same JSON-shaped answers, the admin API's), so ``gateway/admin/cli.py`` prints alike in both modes.
The key is sent as ``Authorization: Bearer`` and never shown: a refusal is a ``Refused`` carrying
the gateway's own message (``{"error": {"message": ...}}``) and status, a gateway that cannot be
reached is one naming the URL and the network error.

The standard library's urllib (in a thread) makes the calls: one request per command needs no client
library, and the served package's run install then holds nothing the gateway itself does not use.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import date
from types import TracebackType
from typing import Any

from gateway.admin.cli_usage import is_key_or_id

TIMEOUT_S = 30.0


class Refused(Exception):
    """The operation was refused (an unknown key, a gateway's 4xx, an unreachable gateway): exit status 1."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message, self.status = message, status


class Remote:
    def __init__(self, url: str, api_key: str):
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        # No proxy from the environment: the key goes to the gateway named, nowhere else.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    async def __aenter__(self) -> Remote:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None

    def _send(self, method: str, path: str, query: dict[str, Any], body: dict[str, Any] | None) -> tuple[int, bytes]:
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers, **({"Content-Type": "application/json"} if data is not None else {}))
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with self._opener.open(request, timeout=TIMEOUT_S) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as answer:  # a 4xx or 5xx: its body carries the gateway's message
            with answer:
                return answer.code, answer.read()

    async def _call(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                    body: dict[str, Any] | None = None) -> Any:
        query = {name: value for name, value in (params or {}).items() if value is not None}
        try:
            status, raw = await asyncio.to_thread(self._send, method, path, query, body)
        except (OSError, ValueError) as exc:  # refused, reset, timed out, a bad URL: never the key (a header)
            reason = getattr(exc, "reason", exc)
            text = str(reason).strip()
            raise Refused(f"cannot reach the gateway at {self.url}: {type(reason).__name__}"
                          f"{': ' + text.splitlines()[0][:200] if text else ''}") from None
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if 200 <= status < 300 and answer is not None:
            return answer
        message = answer.get("error", {}).get("message") if isinstance(answer, dict) else None
        if not isinstance(message, str):
            text = raw.decode("utf-8", "replace").strip()
            message = text.splitlines()[0][:200] if text else "no message"
        raise Refused(f"the gateway answered {status} to {method} {path}: {message}", status=status)

    # ---- keys ---------------------------------------------------------------------------------------

    async def create_key(self, fields: dict[str, Any]) -> dict[str, Any]:
        return await self._call("POST", "/key/generate", body=fields)

    async def list_keys(self, *, page: int, size: int, team_id: str | None) -> tuple[list[dict[str, Any]], int]:
        answer = await self._call("GET", "/key/list", params={"page": page, "size": size, "team_id": team_id,
                                                              "return_full_object": "true"})
        return answer["keys"], answer["total_count"]

    async def key(self, ref: str) -> dict[str, Any]:
        """The key given as the key, its id or its alias."""
        if is_key_or_id(ref):
            return (await self._call("GET", "/key/info", params={"key": ref}))["info"]
        answer = await self._call("GET", "/key/list", params={"key_alias": ref, "return_full_object": "true",
                                                              "size": 1})
        if not answer["keys"]:
            raise Refused("No such key (give the key, its id or its alias).", status=404)
        return answer["keys"][0]

    async def update_key(self, fields: dict[str, Any]) -> dict[str, Any]:
        return await self._call("POST", "/key/update", body=fields)

    async def set_blocked(self, token: str, blocked: bool) -> dict[str, Any]:
        return await self._call("POST", "/key/block" if blocked else "/key/unblock", body={"key": token})

    async def delete_key(self, token: str) -> list[str]:
        return (await self._call("POST", "/key/delete", body={"keys": [token]}))["deleted_keys"]

    # ---- teams --------------------------------------------------------------------------------------

    async def create_team(self, fields: dict[str, Any]) -> dict[str, Any]:
        return await self._call("POST", "/team/new", body=fields)

    async def teams(self, page: int, size: int) -> list[dict[str, Any]]:
        return await self._call("GET", "/team/list", params={"page": page, "size": size})

    # ---- spend --------------------------------------------------------------------------------------

    async def spend_report(self, *, start: date, end: date, group_by: str, api_key: str | None,
                           team_id: str | None) -> list[dict[str, Any]]:
        return await self._call("GET", "/global/spend/report", params={
            "start_date": start.isoformat(), "end_date": end.isoformat(), "group_by": group_by,
            "api_key": api_key, "team_id": team_id})

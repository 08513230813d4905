"""The trailing-slash redirect, relative: ``GET /key/list/`` -> 307 ``location: /key/list``.

Starlette's own redirect builds an absolute URL from the request's ``Host`` header, so a request
sent with ``Host: evil.example`` was sent on to ``http://evil.example/key/list``: whatever caches or
follows that answer goes elsewhere. Here the router's own redirect is off
(``redirect_slashes=False``) and its fallback answers with the path alone (and the query), when the
other spelling names a route; a path that would start with ``//`` (a protocol-relative URL: another
host) is never redirected. Otherwise the router's 404 stands.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.responses import RedirectResponse
from starlette.routing import Match


class RelativeSlashRedirect:
    """The router's ``default`` app (what runs when no route matched)."""

    def __init__(self, router: Any) -> None:
        self.router = router
        self.not_found = router.not_found

    async def __call__(self, scope, receive, send) -> None:
        target = self.other_spelling(scope) if scope["type"] == "http" else None
        if target is None:
            await self.not_found(scope, receive, send)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        location = quote(target, safe="/%:@!$&'()*+,;=-._~") + (f"?{query}" if query else "")
        await RedirectResponse(location, status_code=307)(scope, receive, send)

    def other_spelling(self, scope) -> str | None:
        """The path with its trailing slash toggled, when a route takes that and it stays on this host."""
        path = scope["path"]
        root = scope.get("root_path", "")
        route_path = path[len(root):] if root and path.startswith(root) else path
        if route_path in ("", "/"):
            return None
        other = path.rstrip("/") if path.endswith("/") else path + "/"
        if not other.startswith("/") or other.startswith("//") or "\\" in other:
            return None
        other_scope = {**scope, "path": other}
        if any(route.matches(other_scope)[0] is not Match.NONE for route in self.router.routes):
            return other
        return None


def install(router: Any) -> None:
    router.redirect_slashes = False
    router.default = RelativeSlashRedirect(router)

"""The admin UI at ``/ui``: the static files of the top-level ``ui/`` folder (shipped in the package).

Plain HTML, CSS and ES modules of our own, served as they are (no build step), with a strict
Content-Security-Policy: scripts, styles and connections from this origin only, no inline script or
style, no frames, no plugins. Only the known file types are served, from inside the folder; anything
else is a 404. The pages call the gateway's own API with the key the user typed, which the page
keeps in the tab's session storage (never a cookie, never a URL), so these routes need no key: they
hold no data.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

UI_DIR = Path(__file__).resolve().parents[2] / "ui"  # the repository's ui/ (gateway/edge/ui.py)
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
                 ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png",
                 ".ico": "image/x-icon"}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Cache-Control": "no-cache",  # revalidated each load: an upgraded gateway serves its new pages at once
}
MAX_PATH_CHARS = 200


def ui_file(path: str, root: Path = UI_DIR) -> Path | None:
    """The file ``path`` names inside ``root``, or None (outside it, hidden, unknown type, missing)."""
    if len(path) > MAX_PATH_CHARS or "\\" in path or "\x00" in path:
        return None
    parts = [part for part in path.split("/") if part]
    if any(part.startswith(".") for part in parts):
        return None
    target = (root.joinpath(*parts) if parts else root / "index.html").resolve()
    if target.suffix not in CONTENT_TYPES or not target.is_relative_to(root.resolve()) or not target.is_file():
        return None
    return target


async def serve(request: Request) -> Response:
    target = ui_file(request.path_params.get("path", ""))
    if target is None:
        return Response("Not found.\n", status_code=404, media_type="text/plain; charset=utf-8",
                        headers=SECURITY_HEADERS)
    return Response(target.read_bytes(), media_type=CONTENT_TYPES[target.suffix], headers=SECURITY_HEADERS)


async def to_index(request: Request) -> Response:
    return RedirectResponse("/ui/", status_code=307)


ROUTES = [Route("/ui", to_index, methods=["GET", "HEAD"]),
          Route("/ui/{path:path}", serve, methods=["GET", "HEAD"])]

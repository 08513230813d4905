"""``/docs``: Swagger UI over ``/openapi.json``, its files served from the installed package.

FastAPI's own page loads Swagger UI from a CDN (no Subresource Integrity, no Content-Security-Policy)
and starts it with an inline script, while its Authorize dialog takes the master key: whoever serves
or alters those files reads the key. Here the page, the bundle and its stylesheet come from this
gateway (the ``fastapi-offline`` package ships Swagger UI's dist files, pinned in pyproject.toml; it
works offline too) under a CSP that lets scripts, styles and connections come from this origin only;
the page is started by a small script of our own (``INIT_JS``), not an inline one. No OAuth2 redirect
page: the gateway's keys are API keys.
"""

from __future__ import annotations

import importlib.resources
from html import escape

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.edge.ui import SECURITY_HEADERS

DOCS_PATH = "/docs"
ASSETS = DOCS_PATH + "/assets"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {**SECURITY_HEADERS, "Content-Security-Policy": CSP}
SWAGGER_FILES = {  # the files of the package this page uses, and their types
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
INIT_JS = b"""\
"use strict";
const root = document.getElementById("swagger-ui");
window.ui = SwaggerUIBundle({
  url: root.dataset.openapi, dom_id: "#swagger-ui", layout: "BaseLayout", deepLinking: true,
  showExtensions: true, showCommonExtensions: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
"""
PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} - API</title>
<link rel="icon" href="{assets}/favicon.png">
<link rel="stylesheet" href="{assets}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-openapi="{openapi}"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script src="{assets}/docs.js"></script>
</body>
</html>
"""


def swagger_file(name: str) -> bytes | None:
    """One of ``SWAGGER_FILES`` from the installed package, or None."""
    if name not in SWAGGER_FILES:
        return None
    return (importlib.resources.files("fastapi_offline") / "static" / name).read_bytes()


async def page(request: Request) -> Response:
    root = request.scope.get("root_path", "")
    html = PAGE.format(title=escape(request.app.title), assets=escape(root + ASSETS),
                       openapi=escape(root + (request.app.openapi_url or "/openapi.json")))
    return Response(html, media_type="text/html; charset=utf-8", headers=HEADERS)


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name == "docs.js":
        return Response(INIT_JS, media_type="text/javascript; charset=utf-8", headers=HEADERS)
    content = swagger_file(name)
    if content is None:
        return Response("Not found.\n", status_code=404, media_type="text/plain; charset=utf-8", headers=HEADERS)
    return Response(content, media_type=SWAGGER_FILES[name], headers=HEADERS)


ROUTES = [Route(DOCS_PATH, page, methods=["GET", "HEAD"], include_in_schema=False),
          Route(ASSETS + "/{name}", asset, methods=["GET", "HEAD"], include_in_schema=False)]

"""The backend's HTTP app: ``/v1/decisions``, ``/v1/systemone``, ``/v1/score``, ``/v1/models``, ``/health``.

Bodies may be ``Content-Encoding: zstd`` (typesafe-sdk compresses bodies of 1 KiB and more) or gzip.
"""

from __future__ import annotations

import gzip
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from backend.errors import BackendRefusal, error_body
from backend.service import DecisionService, parse_json


def _decode(raw: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    raise BackendRefusal(f"Content-Encoding '{encoding}' is not supported; send identity, gzip or zstd")


def _refusal(err: BackendRefusal) -> JSONResponse:
    return JSONResponse(error_body(err), status_code=err.status, headers=err.headers)


def create_app(service: DecisionService) -> FastAPI:
    app = FastAPI(title="decisions-gateway backend", docs_url=None, redoc_url=None)
    app.state.service = service

    async def post(path: str, request: Request) -> JSONResponse:
        try:
            content_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
            if content_type not in ("application/json", ""):
                raise BackendRefusal(f"{path} takes application/json, not {content_type}")
            body: Any = parse_json(_decode(await request.body(), request.headers.get("content-encoding", "")))
        except BackendRefusal as err:
            if path == "/v1/systemone":  # System One clients read schema problems as 422 with a detail list
                err = BackendRefusal(err.message, 422, payload={"detail": [
                    {"type": "json_invalid", "loc": ["body"], "msg": err.message}]})
            return _refusal(err)
        except Exception as err:  # noqa: BLE001 - a corrupt compressed body
            return _refusal(BackendRefusal(f"the body could not be decoded: {err}"))
        status, payload, headers = await service.handle(path, body)
        return JSONResponse(payload, status_code=status, headers=headers)

    @app.post("/v1/decisions")
    async def decisions(request: Request) -> JSONResponse:
        return await post("/v1/decisions", request)

    @app.post("/v1/systemone")
    async def systemone(request: Request) -> JSONResponse:
        return await post("/v1/systemone", request)

    @app.post("/v1/score")
    async def score(request: Request) -> JSONResponse:
        return await post("/v1/score", request)

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": service.loaded.name, "object": "model", "owned_by": "local"}]}

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "model": service.loaded.name, "device": service.loaded.device,
                "prompt_format_version": service.decider.version}

    return app

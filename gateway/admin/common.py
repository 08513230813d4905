"""What every admin route shares: the caller checked first, a capped body, errors in OpenAI's envelope.

``AdminRoute`` (the routers' ``route_class``) runs, before FastAPI reads or validates anything:

1. the admin API is on only with a master key (``general_settings.master_key`` or
   ``DECISIONS_GATEWAY_MASTER_KEY``): 403 ``admin_disabled`` otherwise;
2. the caller's key (``Authorization: Bearer``, ``x-api-key``, ``api-key``) is resolved: 401 / 403;
3. the body is read up to ``MAX_BODY_BYTES`` (413 past it, before or after its ``Content-Encoding``,
   zstd, gzip or deflate as on the decision routes, is undone) and a JSON body parsed strictly
   (``gateway/admin/body.py``: a repeated key, ``NaN`` or a lone surrogate is a 400 naming the field).

Then the route's dependency decides, by the caller's role (``gateway/auth/roles.py``):
``master_admin`` (a proxy admin: the master key or a ``proxy_admin`` user's key; 403 ``read_only``
for a viewer, ``admin_only`` otherwise), ``reader_admin`` (a proxy admin or viewer), ``key_writer``
(anyone who may change some key: its own as an internal user, its teams' as their admin),
``key_reader`` (anyone with a user or an administered team) or ``caller_admin`` (any valid key;
the route limits what it sees). Every
``DecisionError``, validation error and ``HTTPException`` is answered as
``{"error": {"message", "type", "param", "code"}}``.

From ``request.app.state.gateway`` these read ``config`` (``general_settings``), ``db`` (a
``gateway.db.engine.Database``, or None: 503 ``no_db_connection``) and ``shared`` (the
``SharedState``), and ``auth`` (an ``Authenticator``) when the gateway has one; without it one is
built from those three and kept on ``request.app.state.admin_auth``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPBearer
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException  # what FastAPI raises for a body it cannot parse
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from gateway.admin.body import parse_admin_json
from gateway.admin.service import Admin, refused
from gateway.auth import roles
from gateway.auth.errors import PermissionDenied
from gateway.auth.identity import Authenticator
from gateway.auth.records import Identity
from gateway.decode.body import BodyError, decompress
from translators import openai as openai_wire
from translators.errors import DecisionError, RequestInvalid, format_param

MAX_BODY_BYTES = 64 * 1024

log = logging.getLogger("gateway.admin")


def authenticator(request: Request) -> Authenticator:
    gateway = request.app.state.gateway
    auth = getattr(gateway, "auth", None)
    if isinstance(auth, Authenticator):
        return auth
    auth = getattr(request.app.state, "admin_auth", None)
    if not isinstance(auth, Authenticator):
        auth = Authenticator.build(gateway.config.general_settings, getattr(gateway, "db", None),
                                   getattr(gateway, "shared", None))
        request.app.state.admin_auth = auth
    return auth


def error_response(err: DecisionError) -> JSONResponse:
    status, body = openai_wire.render_error(err)
    return JSONResponse(body, status_code=status, headers=err.headers or None)


# The schemas are strict (gateway/admin/schemas.py): what each refusal means, in words.
STRICT_TYPES = {"float_type": "must be a JSON number (not a string, true or false)",
                "int_type": "must be a whole JSON number (not a fraction, a string, true or false)",
                "bool_type": "must be true or false", "string_type": "must be a JSON string",
                "list_type": "must be a JSON array", "dict_type": "must be a JSON object"}


def validation_error(exc: RequestValidationError) -> RequestInvalid:
    """The first problem FastAPI found, as one sentence naming the field (never echoing its value)."""
    errors = list(exc.errors())
    first = errors[0] if errors else {"loc": (), "msg": "is invalid", "type": "invalid"}
    loc = tuple(part for part in first.get("loc", ())[1:] if isinstance(part, str | int))
    where = format_param(loc) or "The request body"
    kind = str(first.get("type", "invalid"))
    message = {"missing": "is required", "extra_forbidden": "is not a recognised field; remove it",
               "json_invalid": "is not valid JSON", **STRICT_TYPES}.get(kind, str(first.get("msg", "is invalid")))
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    return RequestInvalid(f"{where}: {message.rstrip('.')}." if loc else f"{where} {message.rstrip('.')}.",
                          loc or None, code=kind)


async def read_capped(request: Request, limit: int = MAX_BODY_BYTES) -> None:
    """Read the body (kept for FastAPI to parse) and refuse it past ``limit`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    request._body = _decoded(b"".join(chunks), request.headers.get("content-encoding"), limit)
    if request._body and _is_json(request.headers.get("content-type")):
        request._json = parse_admin_json(request._body)  # what FastAPI's request.json() then returns


def _decoded(raw: bytes, content_encoding: str | None, limit: int) -> bytes:
    """The body with its ``Content-Encoding`` (zstd, gzip, deflate, as on the decision routes) undone,
    at most ``limit`` bytes once decoded: 415 for an encoding the gateway does not read, 400 for data
    that is not what the header says, 413 past the limit."""
    if not raw or not (content_encoding or "").strip():
        return raw
    try:
        return decompress(raw, content_encoding, limit)
    except BodyError as exc:
        if exc.kind == "size":
            raise RequestInvalid(f"The request body is larger than {limit // 1024} KiB once decoded.", None,
                                 status=413, code="request_too_large") from None
        raise RequestInvalid(exc.message, None, status=exc.status,
                             code="unsupported_encoding" if exc.status == 415 else "invalid_encoding") from None


def _is_json(content_type: str | None) -> bool:
    """Whether FastAPI reads the body as JSON: no Content-Type, ``application/json`` or ``application/*+json``."""
    media = (content_type or "").partition(";")[0].strip().lower()
    return not media or media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _too_large(limit: int) -> RequestInvalid:
    return RequestInvalid(f"The request body is larger than {limit // 1024} KiB.", None, status=413,
                          code="request_too_large")


class AdminRoute(APIRoute):
    requires_master_key = True  # off without one (the admin API); the calibration routes are open with the gateway
    body_limit = MAX_BODY_BYTES

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            try:
                auth = authenticator(request)
                if not auth.required and self.requires_master_key:
                    raise PermissionDenied("The admin API is off: set general_settings.master_key "
                                           "(or DECISIONS_GATEWAY_MASTER_KEY).", code="admin_disabled")
                request.state.admin_identity = await auth.resolve_headers(request.headers)
                request.state.open_gateway = not auth.required
                await read_capped(request, self.body_limit)
                return await handler(request)
            except DecisionError as err:
                return error_response(err)
            except ClientDisconnect:  # gone before its body arrived (a page closed mid-request): nobody to answer
                return Response(status_code=499)
            except RequestValidationError as exc:
                return error_response(validation_error(exc))
            except HTTPException as exc:
                return error_response(DecisionError(status=exc.status_code, message=str(exc.detail),
                                                    type="invalid_request_error"))
            except (SQLAlchemyError, OSError) as exc:  # the database is away: say so, and nothing of the query
                log.error("admin %s %s: database error %s", request.method, request.url.path, type(exc).__name__)
                return error_response(DecisionError(status=503, message="The database is unavailable; try again "
                                                    "shortly.", type="service_unavailable", code="db_unavailable"))

        return guarded


@dataclass
class Caller:
    identity: Identity
    admin: Admin


def _admin(request: Request) -> Admin:
    gateway = request.app.state.gateway
    db = getattr(gateway, "db", None)
    if db is None:
        raise DecisionError(status=503, message="The admin API needs a database: set general_settings.database_url.",
                            type="service_unavailable", code="no_db_connection")
    auth = authenticator(request)
    return Admin(db=db, hasher=auth.hasher, changed=auth.changed, registry=getattr(gateway, "registry", None))


# Declared for /docs (the "Authorize" button); the key is checked by AdminRoute, not by these.
_bearer = HTTPBearer(auto_error=False, description="The master key (a virtual key for /key/info)")
_api_key = APIKeyHeader(name="x-api-key", auto_error=False)


def master_admin(request: Request, _b: Annotated[Any, Depends(_bearer)],
                 _k: Annotated[Any, Depends(_api_key)]) -> Admin:
    identity: Identity = request.state.admin_identity
    if not roles.writes_all(identity):
        raise refused(identity, "Only a proxy admin (the master key, or a proxy_admin user's key) may use this "
                      "admin route.")
    return _admin(request)


def caller_admin(request: Request, _b: Annotated[Any, Depends(_bearer)],
                 _k: Annotated[Any, Depends(_api_key)]) -> Caller:
    return Caller(identity=request.state.admin_identity, admin=_admin(request))


def reader_admin(request: Request, _b: Annotated[Any, Depends(_bearer)],
                 _k: Annotated[Any, Depends(_api_key)]) -> Caller:
    identity: Identity = request.state.admin_identity
    if not roles.reads_all(identity):
        raise PermissionDenied("Only a proxy admin or viewer may use this admin route.", code="admin_only")
    return Caller(identity=identity, admin=_admin(request))


def key_writer(request: Request, _b: Annotated[Any, Depends(_bearer)],
               _k: Annotated[Any, Depends(_api_key)]) -> Caller:
    """A caller that may change some key (checked before the body: nobody else learns what it should hold)."""
    identity: Identity = request.state.admin_identity
    if not (roles.writes_all(identity) or roles.manages_own_keys(identity) or roles.admin_teams(identity)):
        raise refused(identity, "This caller may change no key: a proxy admin changes any, an internal user its "
                      "own, a team admin its team's.")
    return Caller(identity=identity, admin=_admin(request))


def key_reader(request: Request, _b: Annotated[Any, Depends(_bearer)],
               _k: Annotated[Any, Depends(_api_key)]) -> Caller:
    """A caller that may list keys: a proxy admin or viewer, a user (its own) or a team admin (its teams')."""
    identity: Identity = request.state.admin_identity
    if not (roles.reads_all(identity) or identity.user_id is not None or roles.admin_teams(identity)):
        raise PermissionDenied("A key of no user may read only its own info (/key/info).", code="admin_only")
    return Caller(identity=identity, admin=_admin(request))


def team_reader(request: Request, _b: Annotated[Any, Depends(_bearer)],
                _k: Annotated[Any, Depends(_api_key)]) -> Caller:
    """A caller that may read some team (``/team/info``): a proxy admin or viewer, or a team's admin;
    refused before the query is validated, so a caller that may read none learns nothing of it."""
    identity: Identity = request.state.admin_identity
    if not (roles.reads_all(identity) or roles.admin_teams(identity)):
        raise PermissionDenied("Only proxy admins and viewers, and a team's admins, read a team.", code="admin_only")
    return Caller(identity=identity, admin=_admin(request))


MasterAdmin = Annotated[Admin, Depends(master_admin)]
AnyCaller = Annotated[Caller, Depends(caller_admin)]
ReadAll = Annotated[Caller, Depends(reader_admin)]
KeyWriter = Annotated[Caller, Depends(key_writer)]
KeyReader = Annotated[Caller, Depends(key_reader)]
TeamReader = Annotated[Caller, Depends(team_reader)]


def pages(total: int, size: int) -> int:
    return (total + size - 1) // size if total else 0

"""The spend log: one row per decision call, durable before the response leaves.

The record step hands each finished request to ``SpendLog.write``, which appends its row to the
local outbox (``gateway/db/outbox.py``: a WAL SQLite file in the data directory; durable against
``kill -9`` when ``append`` returns). A thread of its own (``gateway/db/drain_thread.py``) drains the
outbox into the database in batches, idempotent by ``request_id``, so a database outage or a crash
loses no row and writes none twice, and a drain never stalls the requests being answered. The
database is opened at start (migrations applied unless ``auto_migrate: false``); when it cannot be
reached the gateway serves anyway, keeps the rows in the outbox, and keeps trying.

Request content is not stored unless ``general_settings.store_content`` is ``digest`` (the
SHA-256 of the body) or ``full`` (the body, up to 64 KiB).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gateway.cache.steps import paid_usage, spend_columns
from gateway.decisionlog.rows import decision_rows

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from gateway.context import RequestContext
    from gateway.db.drain_thread import DrainThread
    from gateway.db.engine import Database
    from gateway.db.outbox import SpendOutbox
    from gateway.decisionlog.settings import DecisionLogSettings

log = logging.getLogger("gateway.spend")

RECONNECT_S = 5.0
MAX_CONTENT_CHARS = 64 * 1024
STORE_CONTENT = ("none", "digest", "full")
MASTER_KEY_ALIAS = "master key"  # the master key has no key row: its spend carries this alias
MAX_REQUESTED_MODEL_CHARS = 200
# A request whose task was cancelled with no answer decided (the graceful timeout at shutdown; a client
# that went away is a 499, set by the pipeline): what its caller got was the server going away.
CANCELLED_STATUS = 503


class SpendLog:
    def __init__(self, general_settings: dict[str, Any]):
        self.general_settings = general_settings
        self.enabled = not general_settings.get("disable_spend_logs", False)
        self.store_content = str(general_settings.get("store_content") or "none")
        self.db: Database | None = None
        self.outbox: SpendOutbox | None = None
        self.error: str | None = None  # why the database is not open, for readiness
        self._task: asyncio.Task[None] | None = None
        self._drainer: DrainThread | None = None
        self._opened = asyncio.Event()

    async def start(self) -> None:
        """Open the outbox now (it takes rows at once) and the database in the background."""
        from gateway.db.engine import data_dir
        from gateway.db.outbox import SpendOutbox

        if self.enabled:
            self.outbox = SpendOutbox(data_dir() / "outbox")
        self._task = asyncio.ensure_future(self._run())

    async def wait_open(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the database (the admin API and virtual keys need it)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._opened.wait(), timeout)
        return self.db is not None

    async def _run(self) -> None:
        from gateway.db.drain_thread import DrainThread
        from gateway.db.engine import auto_migrate_from_settings, database_url_from_settings, open_database

        settings = self.general_settings

        def opener(migrate: bool) -> Callable[[], Awaitable[Database]]:
            return lambda: open_database(database_url_from_settings(settings), auto_migrate=migrate,
                                         pool_size=settings.get("database_connection_pool_limit"),
                                         pool_timeout=settings.get("database_connection_timeout"))

        while self.db is None:
            try:
                self.db = await opener(auto_migrate_from_settings(settings))()
            except Exception as exc:  # noqa: BLE001 - the database's fault: keep serving, keep trying
                self.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                log.error("the database cannot be opened (%s); spend rows wait in the outbox, retrying in "
                          "%.0f s", self.error, RECONNECT_S)
                self._opened.set()  # callers waiting for it learn it is not there
                await asyncio.sleep(RECONNECT_S)
                self._opened.clear()
        self.error = None
        self._opened.set()
        if self.outbox is not None:  # the drain's own engine, on its own thread (migrated by the one above)
            self._drainer = DrainThread(self.outbox, opener(False))
            self._drainer.start()

    def write(self, ctx: RequestContext, decision_log: DecisionLogSettings | None = None) -> None:
        """The request's row into the outbox (durable when this returns): every call that named a model
        group, and every call refused once its body was read (an unknown or missing model: LiteLLM logs
        failed calls too). A request refused before that (no key, an unreadable body) has none. An
        answered request's row carries its decisions (``gateway/decisionlog``), per ``decision_log``."""
        if self.outbox is None or (ctx.model_group is None and (ctx.error is None or ctx.body is None)):
            return
        row = spend_row(ctx, self.store_content)
        if decision_log is not None and ctx.result is not None:
            identity = ctx.identity
            capture = decision_log.capture_for(ctx.model_group, getattr(identity, "metadata", None),
                                               getattr(identity, "team_metadata", None))
            decisions, captured = decision_rows(ctx, capture)
            if decisions:
                row["decisions"] = decisions
            if captured is not None:
                row["decision_input"] = captured
        self.outbox.append(row)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {"database": "open" if self.db is not None else "unavailable"}
        if self.error:
            out["database_error"] = self.error
        if self.outbox is not None:
            out["outbox_depth"] = self.outbox.depth()
        return out

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._drainer is not None:
            await self._drainer.close()  # the last drain and the outbox's files, on the drain's thread
        elif self.outbox is not None:
            await self.outbox.close(None)  # the database never opened: the rows stay on disk
        if self.db is not None:
            await self.db.close()


def spend_row(ctx: RequestContext, store_content: str = "none") -> dict[str, Any]:
    """The spend_logs row of a finished request (LiteLLM's column names; the key only as its hash)."""
    identity = ctx.identity
    result, dep, err = ctx.result, ctx.deployment, ctx.error
    usage = paid_usage(ctx)  # what was paid for: the cache's hits are not (gateway/cache)
    metadata: dict[str, Any] = {}
    if result is not None and ctx.cost is None:
        metadata["cost_unknown"] = True  # unpriced, or no token counts: spend 0 here is not a claim of $0
    requested = ctx.body.json.get("model") if ctx.model_group is None and ctx.body is not None else None
    if isinstance(requested, str):
        # not a group, so kept out of the roll-ups; a lone surrogate (JSON allows one) made storable
        metadata["requested_model"] = requested[:MAX_REQUESTED_MODEL_CHARS].encode("utf-8", "replace").decode()
    if ctx.model_group is not None and ctx.model_requested not in (None, ctx.model_group):
        metadata["model_group_alias"] = ctx.model_requested  # asked for by its alias; rolled up as the group
    cancelled = ctx.status == 0 and err is None
    alias = MASTER_KEY_ALIAS if getattr(identity, "is_master", False) else getattr(identity, "key_alias", None)
    row: dict[str, Any] = {
        "request_id": ctx.request_id,
        "api_key": getattr(identity, "key_hash", None) or "",
        "key_alias": alias,
        "team_id": getattr(identity, "team_id", None),
        "user": getattr(identity, "user_id", None),
        "model_group": ctx.model_group,
        "model": f"{dep.provider}/{dep.model}" if dep is not None else None,
        "model_id": dep.id if dep is not None and dep.id else None,
        "custom_llm_provider": dep.provider if dep is not None else None,
        "call_type": ctx.route,
        "prompt_tokens": (usage.input_tokens or 0) if usage else 0,
        "cached_tokens": (usage.cached_tokens or 0) if usage else 0,
        "completion_tokens": (usage.output_tokens or 0) if usage else 0,
        "total_tokens": (usage.total_tokens or 0) if usage else 0,
        "spend": ctx.cost or 0.0,
        "startTime": datetime.fromtimestamp(ctx.started_at, UTC),
        "endTime": datetime.now(UTC),
        "status": CANCELLED_STATUS if cancelled else ctx.status,
        "error_class": (err.code or err.type) if err is not None else "cancelled" if cancelled else None,
        "retries": ctx.retries,
        "fallbacks": ctx.fallbacks,
        "metadata": metadata,
        **spend_columns(ctx),
    }
    if store_content == "digest" and ctx.raw:
        row["content"] = "sha256:" + hashlib.sha256(ctx.raw).hexdigest()
    elif store_content == "full" and ctx.raw:
        row["content"] = ctx.raw[:MAX_CONTENT_CHARS].decode("utf-8", "replace")
    return row

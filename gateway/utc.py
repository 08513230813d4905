"""Times in UTC: ``utc(moment)`` is ``moment`` in UTC, a naive one taken to be UTC already (how the
database, SQLite especially, and LiteLLM's rows keep them). The one rule every module uses."""

from __future__ import annotations

from datetime import UTC, datetime


def utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)

"""Fitted calibrators in ``calibrators``: versioned per (model group, site), one active at a time.

``store(db, ...)`` adds the next version and makes it the active one (the one before stays, inactive,
for a rollback), in one transaction; two fits at once on PostgreSQL are kept apart by the unique
(model group, site, version), the loser retrying with the next number. ``rollback(db, group, site)``
deactivates the active version and activates the newest one below it (none: the site or group is
answered raw again). ``active(db)`` is what the gateway applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from gateway.db.engine import Database
from gateway.db.models import calibrators

ATTEMPTS = 3


@dataclass(frozen=True)
class Rolled:
    deactivated: dict[str, Any] | None
    activated: dict[str, Any] | None


def _shown(row: Any) -> dict[str, Any]:
    out = dict(row._mapping)
    out["created_at"] = out["created_at"].isoformat() if out.get("created_at") is not None else None
    return out


async def store(db: Database, *, model_group: str, site: str, kind: str, method: str, params: dict[str, Any],
                n: int, report: dict[str, Any], created_by: str | None) -> dict[str, Any]:
    c = calibrators.c
    for attempt in range(ATTEMPTS):
        try:
            async with db.engine.begin() as conn:
                top = (await conn.execute(sa.select(sa.func.max(c.version)).where(
                    c.model_group == model_group, c.site == site))).scalar()
                await conn.execute(sa.update(calibrators).where(c.model_group == model_group, c.site == site,
                                                                c.active.is_(True)).values(active=False))
                row = (await conn.execute(sa.insert(calibrators).values(
                    model_group=model_group, site=site, version=(top or 0) + 1, kind=kind, method=method,
                    params=params, n=n, report=report, active=True, created_by=created_by)
                    .returning(*calibrators.c))).one()
                return _shown(row)
        except IntegrityError:
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


async def rollback(db: Database, model_group: str, site: str) -> Rolled:
    c = calibrators.c
    async with db.engine.begin() as conn:
        current = (await conn.execute(sa.select(calibrators).where(
            c.model_group == model_group, c.site == site, c.active.is_(True)).with_for_update())).first()
        if current is None:
            return Rolled(None, None)
        await conn.execute(sa.update(calibrators).where(c.id == current.id).values(active=False))
        before = (await conn.execute(sa.select(calibrators).where(
            c.model_group == model_group, c.site == site, c.version < current.version)
            .order_by(c.version.desc()).limit(1))).first()
        if before is not None:
            await conn.execute(sa.update(calibrators).where(c.id == before.id).values(active=True))
        shown_before = _shown(before) | {"active": True} if before is not None else None
        return Rolled(_shown(current) | {"active": False}, shown_before)


async def listing(db: Database, model_group: str | None = None, site: str | None = None,
                  limit: int = 500) -> list[dict[str, Any]]:
    c = calibrators.c
    query = sa.select(calibrators)
    if model_group is not None:
        query = query.where(c.model_group == model_group)
    if site is not None:
        query = query.where(c.site == site)
    async with db.engine.connect() as conn:
        rows = (await conn.execute(query.order_by(c.model_group, c.site, c.version.desc()).limit(limit))).all()
    return [_shown(r) for r in rows]


async def active(db: Database) -> list[dict[str, Any]]:
    async with db.engine.connect() as conn:
        rows = (await conn.execute(sa.select(calibrators).where(calibrators.c.active.is_(True)))).all()
    return [_shown(r) for r in rows]

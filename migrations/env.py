"""Alembic's environment: runs the chain on the connection ``gateway.db.engine.migrate`` hands over.

Online runs get a synchronous ``Connection`` in ``config.attributes["connection"]`` (the async engine's,
through ``run_sync``), already inside the transaction that holds the migration lock. Offline runs
(``--sql``) render the SQL for ``sqlalchemy.url``.
"""

from __future__ import annotations

from alembic import context

from gateway.db.models import Base

config = context.config
target_metadata = Base.metadata


def run_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run the chain through gateway.db.engine.migrate or 'decisions-gateway migrate'")
    # render_as_batch: later ALTERs on SQLite become copy-and-move, so one chain serves both dialects
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True,
                      compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()

"""Durable records: keys, teams, spend rows and daily roll-ups, through SQLAlchemy 2 (async).

``engine`` opens the database (and applies the Alembic chain in ``migrations/``), ``models`` declares
the tables, ``spend`` inserts spend rows and their roll-ups idempotently, ``outbox`` is the local
durable queue the request path writes to, ``queries`` reads for the admin API.
"""

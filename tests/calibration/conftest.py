"""The database fixtures of tests/db (SQLite and this run's PostgreSQL database) for the decision log's SQL."""

from tests.db.conftest import data_dir, db, db_url, pg_databases, pg_url  # noqa: F401 - fixtures

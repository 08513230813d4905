"""Dates on the spend routes at and beyond the edges of what a date can hold (issue 19, item 10): a 400 naming
the field, never an OverflowError, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from tests.admin.conftest import AdminEnv
from tests.admin.test_keys_api import error_of


@pytest.mark.parametrize("path, params, field", [
    ("/spend/logs", {"end_date": "9999-12-31"}, "end_date"),
    ("/spend/logs", {"start_date": "9999-12-31T23:59:59-01:00"}, "start_date"),
    ("/spend/logs", {"end_date": "0001-01-01T00:00:00+01:00"}, "end_date"),
    ("/spend/logs/v2", {"end_date": "9999-12-31"}, "end_date"),
    ("/global/spend/report", {"end_date": "0001-01-01T00:00:00+01:00"}, "end_date"),
    ("/global/spend/report", {"end_date": "9999-12-31T23:00:00-05:00"}, "end_date"),
    ("/global/spend/report", {"start_date": "0001-01-01"}, "start_date"),
])
async def test_out_of_range_dates_are_a_400_naming_the_field(env: AdminEnv, path: str, params: dict, field: str):
    error = error_of(await env.client().get(path, params=params), 400)
    assert error["param"] == field and error["message"].startswith(f"{field}: is out of range"), error


async def test_dates_at_the_edges_of_the_range_are_answered(env: AdminEnv):
    admin = env.client()
    for path, params in (("/spend/logs/v2", {"start_date": "0001-01-02", "end_date": "9999-12-30"}),
                         ("/spend/logs", {"start_date": "0001-01-02", "end_date": "9999-12-30", "summarize": False}),
                         ("/global/spend/report", {"end_date": "0001-01-02"}),
                         ("/global/spend/report", {"start_date": "9999-12-30", "end_date": "9999-12-30"})):
        response = await admin.get(path, params=params)
        assert response.status_code == 200, (path, params, response.text)

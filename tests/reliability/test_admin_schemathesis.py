"""Schemathesis over the running gateway's ``/openapi.json``, the admin API's operations (``/key/*``,
``/team/*``, ``/spend/logs``, ``/global/spend/report``, ``/model/info``, ``/config/reload``, ``/calibration/*``, ``/v1/outcomes``), with the
master key: no 500, a 200 matches the documented schema, and every answer is in OpenAI's error envelope
(the admin API's, as LiteLLM's) or a documented body. A few examples per operation keep it well under a
minute."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import HealthCheck, given, settings

from tests.fakes.typesafe import FakeTypeSafe
from tests.reliability.wire_checks import ADMIN, problem

MASTER = "sk-master-schemathesis-0123456789"
ADMIN_PATHS = r"^/(key|team|spend|global|model|model_group|config|v1/model|v2/team|calibration|v1/outcomes)\b"


@pytest.fixture(scope="module")
def admin_gateway(gateway_factory, tmp_path_factory):
    with FakeTypeSafe("ts-schema-key") as upstream:
        db = tmp_path_factory.mktemp("schemathesis") / "gateway.db"
        yield gateway_factory({"model_list": [{"model_name": "jev", "litellm_params": {
            "model": "typesafe/jev-latest", "api_key": "ts-schema-key", "api_base": upstream.url}}],
            "general_settings": {"master_key": MASTER, "database_url": f"sqlite:///{db}"}})


def admin_operations(url: str) -> list:
    import schemathesis

    schema = schemathesis.openapi.from_url(url + "/openapi.json").include(path_regex=ADMIN_PATHS)
    return [result.ok() for result in schema.get_all_operations()]


def test_the_schema_documents_the_admin_api(admin_gateway):
    paths = httpx.get(admin_gateway.url + "/openapi.json", timeout=10).json()["paths"]
    assert {"/key/generate", "/key/info", "/key/update", "/key/delete", "/team/new", "/team/info",
            "/spend/logs", "/global/spend/report"} <= set(paths)


def test_admin_operations_never_fail_and_answer_as_documented(admin_gateway):
    """Each operation's cases come from schemathesis's strategy (``APIOperation.as_strategy``), run by
    Hypothesis here: its pytest plugin's lazy schema loading does not work under pytest 9."""
    from schemathesis.checks import not_a_server_error, response_schema_conformance

    operations = admin_operations(admin_gateway.url)
    assert len(operations) >= 15
    for operation in operations:
        @settings(max_examples=8, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case) -> None:
            response = case.call_and_validate(base_url=admin_gateway.url,
                                              headers={"Authorization": f"Bearer {MASTER}"},
                                              checks=[not_a_server_error, response_schema_conformance], timeout=10)
            headers = {k.lower(): v[0] if isinstance(v, list) else v for k, v in response.headers.items()}
            why = problem(ADMIN, response.status_code, headers, response.content)
            assert why is None, (case.method, case.formatted_path, why)

        run()

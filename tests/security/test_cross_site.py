"""Browser requests from other origins, as their headers reach the gateway (issue 19 item 7; the real
browser's case is tests/ui/test_other_origins.py): refused on every route that spends money, before
the upstream hears of them, unless the origin is in ``allowed_origins``; CORS preflights answered for
allowed origins only; server-side clients and same-origin pages untouched."""

from __future__ import annotations

import httpx
import pytest

from gateway.config.errors import ConfigError
from gateway.edge.cross_site import CrossSitePolicy
from tests.security.conftest import hostile_config

FRIEND = "https://app.example"
EVIL = "https://evil.example"
SYSTEMONE = {"model": "jev", "state": "Charged twice.", "questions": {"refund": {"type": "noul", "instructions": "?"}}}
OPENAI = {"model": "luna", "input": "Charged twice.", "questions": [{"type": "predicate", "instructions": "Refund?"}]}


@pytest.fixture(scope="module")
def guarded(gateway_factory, hostile_typesafe, hostile_openai):
    return gateway_factory(hostile_config(hostile_typesafe, hostile_openai, allowed_origins=[FRIEND + "/"]))


def test_cross_site_and_same_site_browser_requests_spend_nothing(guarded, hostile_typesafe, hostile_openai):
    foreign = [{"Sec-Fetch-Site": "cross-site", "Origin": EVIL}, {"Sec-Fetch-Site": "same-site", "Origin": EVIL},
               {"Sec-Fetch-Site": "cross-site"},  # a no-cors request whose Origin was left out
               {"Origin": EVIL}, {"Origin": "null"}]  # browsers without Sec-Fetch-Site
    with httpx.Client(base_url=guarded.url, timeout=10) as client:
        for headers in foreign:
            for path, body in (("/v1/systemone", SYSTEMONE), ("/systemone", SYSTEMONE), ("/v1/decisions", OPENAI),
                               ("/decisions", OPENAI), ("/typesafe/v1/systemone", SYSTEMONE),
                               ("/laya/v1/systemone", SYSTEMONE), ("/bespoke/v1/systemone", SYSTEMONE)):
                answer = client.post(path, json=body, headers=headers)
                assert answer.status_code == 403, (path, headers, answer.text)
                assert "cross_site_request" in answer.text and "access-control-allow-origin" not in answer.headers
            assert client.get("/typesafe/v1/models", headers=headers).status_code == 403  # a pass-through, any method
    assert hostile_typesafe.requests == [] and hostile_openai.requests == []


def test_server_side_clients_same_origin_pages_and_allowed_origins_are_served(guarded, hostile_typesafe):
    host = guarded.url.removeprefix("http://")
    served = [{}, {"Sec-Fetch-Site": "same-origin", "Origin": guarded.url}, {"Origin": guarded.url},
              {"Origin": f"https://{host}"}, {"Sec-Fetch-Site": "none"},
              {"Sec-Fetch-Site": "cross-site", "Origin": FRIEND}, {"Origin": "HTTPS://APP.example:443"}]
    with httpx.Client(base_url=guarded.url, timeout=10) as client:
        for headers in served:
            answer = client.post("/v1/systemone", json=SYSTEMONE, headers=headers)
            assert answer.status_code == 200, (headers, answer.text)
            allowed = headers.get("Origin", "").lower().startswith(FRIEND)
            assert (answer.headers.get("access-control-allow-origin") is not None) is allowed
        # reading what the gateway offers is no spending: a page elsewhere may link to it
        assert client.get("/v1/models", headers={"Sec-Fetch-Site": "cross-site", "Origin": EVIL}).status_code == 200
    assert len(hostile_typesafe.requests) == len(served)


def test_preflights_are_answered_for_allowed_origins_only(guarded):
    ask = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, authorization"}
    with httpx.Client(base_url=guarded.url, timeout=10) as client:
        friend = client.options("/v1/decisions", headers={**ask, "Origin": FRIEND})
        evil = client.options("/v1/decisions", headers={**ask, "Origin": EVIL})
    assert friend.status_code == 204 and friend.headers["access-control-allow-origin"] == FRIEND
    assert "POST" in friend.headers["access-control-allow-methods"]
    assert friend.headers["access-control-allow-headers"] == "content-type, authorization"
    assert "access-control-allow-credentials" not in friend.headers
    assert evil.status_code == 403 and not any(name.startswith("access-control-") for name in evil.headers)


@pytest.mark.parametrize("value", [["https://app.example/path"], ["app.example"], "ftp://app.example", [7],
                                   ["https://user@app.example"], {"a": 1}])
def test_allowed_origins_that_are_not_origins_fail_the_start_naming_the_entry(value):
    with pytest.raises(ConfigError, match="allowed_origins"):
        CrossSitePolicy.from_settings({"allowed_origins": value})

"""The decision log's and calibration's settings: checked at load, and the narrowest setting wins."""

from __future__ import annotations

import pytest

from gateway.config.errors import ConfigError
from gateway.decisionlog.settings import decision_log_settings, read_header, retention_seconds
from providers.base import Deployment


def dep(name: str, **model_info) -> Deployment:
    return Deployment(model_name=name, provider="typesafe", model="jev-latest", model_info=model_info)


def test_the_narrowest_setting_wins():
    settings = decision_log_settings({"decision_log": {"capture": "none"}, "calibration": "off"},
                                     [dep("jev", decision_log={"capture": "full"}, calibration="apply"), dep("plain")])
    assert settings.capture_for("plain", None, None) == "none"
    assert settings.capture_for("jev", None, None) == "full"
    assert settings.capture_for("jev", None, {"decision_log": {"capture": "digest"}}) == "digest"
    key, team = {"decision_log": {"capture": "none"}}, {"decision_log": {"capture": "digest"}}
    assert settings.capture_for("jev", key, team) == "none"
    assert settings.capture_for("jev", {"decision_log": {"capture": "everything"}}, None) == "full"  # ignored word
    assert settings.calibrate_for("plain", None, None, None) is False
    assert settings.calibrate_for("jev", None, None, None) is True
    assert settings.calibrate_for("jev", {"calibration": "off"}, None, None) is False
    assert settings.calibrate_for("plain", None, {"calibration": "apply"}, None) is True
    assert settings.calibrate_for("jev", None, None, "off") is False
    assert settings.calibrate_for("plain", {"calibration": "off"}, None, "apply") is True
    assert decision_log_settings({}, []).capture == "digest"  # the default


@pytest.mark.parametrize(("general", "infos", "words"), [
    ({"decision_log": {"capture": "all"}}, {}, "decision_log.capture: must be one of none, digest, full"),
    ({"decision_log": {"keep": 1}}, {}, "unknown keys ['keep']"),
    ({"decision_log": {"full_retention": "soon"}}, {}, "full_retention"),
    ({"decision_log": {"sites": {"refund": "xyz"}}}, {}, "sites.refund: must be a site"),
    ({"calibration": "maybe"}, {}, "general_settings.calibration: must be apply or off"),
    ({}, {"calibration": 3}, "model group 'jev': calibration: must be apply or off"),
    ({}, {"decision_log": "full"}, "decision_log must be a mapping"),
])
def test_a_bad_setting_fails_the_start_naming_it(general, infos, words):
    with pytest.raises(ConfigError) as caught:
        decision_log_settings(general, [dep("jev", **infos)])
    assert words in str(caught.value)


def test_the_header_and_retention_words():
    assert read_header(None) is None and read_header(" Apply ") == "apply"
    with pytest.raises(ValueError, match="takes apply or off"):
        read_header("sometimes")
    assert retention_seconds("7d") == 7 * 86400 and retention_seconds("12h") == 43200
    assert retention_seconds("1mo") == 30 * 86400

"""``/ui``: the static files with their content types and a strict Content-Security-Policy, nothing
outside the folder, no third-party code, and every file shipped in the package."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import httpx
import pytest

from gateway.edge.ui import UI_DIR, ui_file
from tests.conftest import start_gateway

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gateway():
    running = start_gateway({"model_list": [{"model_name": "m", "litellm_params": {"model": "typesafe/jev-latest",
                                                                                   "api_key": "x"}}]})
    yield running
    running.stop()


@pytest.mark.parametrize("path,content_type", [("/ui/", "text/html; charset=utf-8"),
                                               ("/ui/index.html", "text/html; charset=utf-8"),
                                               ("/ui/app.css", "text/css; charset=utf-8"),
                                               ("/ui/js/app.js", "text/javascript; charset=utf-8"),
                                               ("/ui/icon.svg", "image/svg+xml")])
def test_files_are_served_with_their_type_and_a_strict_policy(gateway, path, content_type):
    answer = httpx.get(gateway.url + path, timeout=10)
    assert answer.status_code == 200 and answer.headers["content-type"] == content_type
    csp = answer.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self';" in csp and "style-src 'self';" in csp
    assert "unsafe" not in csp and "frame-ancestors 'none'" in csp and "connect-src 'self'" in csp
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert "set-cookie" not in answer.headers


def test_ui_redirects_to_its_folder(gateway):
    answer = httpx.get(gateway.url + "/ui", timeout=10)
    assert answer.status_code == 307 and answer.headers["location"] == "/ui/"


@pytest.mark.parametrize("path", ["/ui/../pyproject.toml", "/ui/%2e%2e/pyproject.toml", "/ui/js/../../gateway/edge/ui.py",
                                  "/ui/.hidden", "/ui/js/missing.js", "/ui/js", "/ui/" + "a" * 300 + ".js",
                                  "/ui/%00.js", "/ui/..%5cpyproject.toml"])
def test_nothing_else_is_served(gateway, path):
    answer = httpx.get(gateway.url + path, timeout=10)
    assert answer.status_code == 404


def test_ui_file_stays_in_its_folder(tmp_path):
    (tmp_path / "ui").mkdir()
    (tmp_path / "ui" / "index.html").write_text("x")
    (tmp_path / "secret.js").write_text("x")
    root = tmp_path / "ui"
    assert ui_file("", root) == root / "index.html"
    assert ui_file("../secret.js", root) is None
    (root / "link.js").symlink_to(tmp_path / "secret.js")
    assert ui_file("link.js", root) is None  # a link out of the folder is not followed


def test_the_pages_hold_no_third_party_code_and_no_inline_script_or_style():
    files = [p for p in UI_DIR.rglob("*") if p.is_file()]
    html = (UI_DIR / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html) and " style=" not in html
    for path in files:
        text = path.read_text()
        assert not re.search(r"""(src|href)=["']https?://""", text), path
        assert not re.search(r"""(import|from)\s*\(?\s*["'](?!\./)""", text) or path.suffix != ".js", path
        assert "innerHTML" not in text and "eval(" not in text, path


def test_every_ui_file_is_in_the_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert any(fnmatch.fnmatch("ui", pattern) for pattern in config["packages"]["find"]["include"])
    patterns = config["package-data"]["ui"]
    for path in UI_DIR.rglob("*"):
        if path.is_file():
            relative = path.relative_to(UI_DIR).as_posix()
            assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), relative

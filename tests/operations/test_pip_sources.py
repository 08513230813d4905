"""tools/pip_sources.py gives uv the package sources pip is configured with (the Makefile installs with
uv, which reads none of pip's configuration)."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path

from tests.operations.conftest import REPO

_SPEC = importlib.util.spec_from_file_location("pip_sources", REPO / "tools" / "pip_sources.py")
assert _SPEC and _SPEC.loader
pip_sources = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(pip_sources)


def test_each_option_comes_from_its_section_of_highest_precedence(tmp_path: Path):
    wheels, local_index = tmp_path / "wheels", tmp_path / "simple"
    wheels.mkdir()
    local_index.mkdir()
    listing = "\n".join([
        "global.cert='/etc/ssl/certs/ca-certificates.crt'",
        "global.find-links='/nowhere'",
        f"global.extra-index-url='{local_index.as_uri()} file:///not/on/this/disk https://mirror.example/simple'",
        "global.index-url='https://pypi.example/simple'",
        "install.index-url='https://install.example/simple'",
        f":env:.find-links='{wheels}'",
        "global.timeout='60'",
        "not a setting",
    ])
    settings = pip_sources.settings_of(listing)
    assert settings == {
        "find-links": [str(wheels)],
        "extra-index-url": [local_index.as_uri(), "file:///not/on/this/disk", "https://mirror.example/simple"],
        "index-url": ["https://install.example/simple"],
    }
    assert pip_sources.uv_options(settings) == [
        "--index-strategy", "unsafe-best-match",
        "--index-url", "https://install.example/simple",
        "--extra-index-url", local_index.as_uri(),  # the missing local index is left out, as pip does
        "--extra-index-url", "https://mirror.example/simple",
        "--find-links", str(wheels),
    ]


def test_without_any_configuration_uv_keeps_its_defaults_and_pips_way_of_choosing():
    assert pip_sources.uv_options(pip_sources.settings_of("")) == ["--index-strategy", "unsafe-best-match"]


def test_the_script_reads_this_machines_pip_configuration_and_prints_shell_words():
    done = subprocess.run([sys.executable, str(REPO / "tools" / "pip_sources.py")], capture_output=True,
                          text=True, check=True, timeout=60)
    words = shlex.split(done.stdout)
    assert words[:2] == ["--index-strategy", "unsafe-best-match"]
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             check=True, timeout=60).stdout
    expected = pip_sources.uv_options(pip_sources.settings_of(listing))
    assert words == expected

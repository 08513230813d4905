"""LiteLLM's proxy for bench/gateway.py: its venv (installed once into the bench's work folder and kept
there for later runs), its config on our zero-delay upstream, the command that starts it.

    python -m bench.litellm [--venv PATH]     # install (or check) the venv and say how it stands

``pip install 'litellm[proxy]==1.110.2'`` comes first. When it does not resolve (today the extra pins
``litellm-proxy==1.110.2``, ``litellm-proxy-extras==0.4.114.post1`` and ``litellm-enterprise==0.1.83.post1``,
which the index does not offer; shared/spec/litellm-reference.md, "Setup limits"), the venv gets
``litellm==1.110.2`` (whose wheel carries ``litellm/proxy`` itself) and every other requirement of the
``proxy`` extra, as the reference's measurements did; the note says so. When neither works the note
says why and the bench reports ours alone.

Without a database LiteLLM has no virtual keys (``/key/generate`` fails: 400 "No connected db." with
prisma installed, a 500 without it), and its database goes through prisma, whose engines are
downloaded from prisma's own host on first use: not reachable from these machines. So the "auth"
configuration runs LiteLLM with its master key only, and the bench's table says so (``NO_KEYS``) with
the answer ``/key/generate`` gave.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK_DIR = ROOT / ".cache" / "bench"  # ignored by git; the venv stays here between runs
DEFAULT_VENV = WORK_DIR / "litellm-venv"
VERSION = "1.110.2"
UNRESOLVABLE = ("litellm-proxy", "litellm-proxy-extras", "litellm-enterprise")  # pins the index lacks
READY_MARK = "bench-ready.txt"
NO_KEYS = ("master key only: LiteLLM's virtual keys need PostgreSQL through prisma, whose engines it downloads "
           "from prisma's own host on first use (not reachable here)")

# Run inside the venv: the requirements of litellm's ``proxy`` extra, less the pins the index lacks.
PROXY_REQUIREMENTS = f"""
from importlib.metadata import requires
from packaging.requirements import Requirement
for line in requires("litellm") or []:
    req = Requirement(line)
    if req.marker and req.marker.evaluate({{"extra": "proxy"}}) and not req.marker.evaluate({{"extra": ""}}):
        if req.name not in {UNRESOLVABLE!r}:
            req.marker = None
            print(req)
"""


@dataclass
class Venv:
    path: Path
    ready: bool
    note: str  # how LiteLLM was installed, or why it is not available

    @property
    def litellm(self) -> Path:
        return self.path / "bin" / "litellm"

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def prepare(venv: Path = DEFAULT_VENV, install: bool = True, timeout: float = 900.0) -> Venv:
    """The venv as it stands, installing it first when it is missing and ``install`` is set."""
    mark = venv / READY_MARK
    if mark.exists() and (venv / "bin" / "litellm").exists():
        return Venv(venv, True, mark.read_text().strip())
    if not install:
        return Venv(venv, False, f"no LiteLLM venv at {venv} (not installed: the run was told not to install)")
    log = venv.parent / "litellm-install.log"
    try:
        note = _install(venv, log, time.monotonic() + timeout)
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        return Venv(venv, False, f"LiteLLM {VERSION} could not be installed: {exc} (pip's output: {log})")
    mark.write_text(note + "\n")
    return Venv(venv, True, note)


def _install(venv: Path, log: Path, deadline: float) -> str:
    venv.parent.mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    with open(log, "w") as out:
        def step(*args: str) -> subprocess.CompletedProcess[str]:
            out.write(f"$ {' '.join(args)}\n")
            out.flush()
            return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  stdin=subprocess.DEVNULL, timeout=max(1.0, deadline - time.monotonic()))

        def must(*args: str) -> str:
            done = step(*args)
            out.write(done.stdout)
            if done.returncode != 0:
                shown = " ".join(arg for arg in args[1:] if "\n" not in arg)
                raise RuntimeError(f"`{shown}` failed: {last_error(done.stdout)}")
            return done.stdout

        if not python.exists():
            must(sys.executable, "-m", "venv", str(venv))
        pip = (str(python), "-m", "pip", "install", "--disable-pip-version-check")
        whole = step(*pip, f"litellm[proxy]=={VERSION}")
        out.write(whole.stdout)
        if whole.returncode == 0:
            note = f"`pip install 'litellm[proxy]=={VERSION}'`"
        else:
            must(*pip, f"litellm=={VERSION}")
            requirements = must(str(python), "-c", PROXY_REQUIREMENTS).split()
            must(*pip, *requirements)
            note = (f"`litellm[proxy]=={VERSION}` does not resolve ({last_error(whole.stdout)}); installed "
                    f"`litellm=={VERSION}` (its wheel carries `litellm/proxy`) and the `proxy` extra's other "
                    f"{len(requirements)} requirements, without {', '.join(UNRESOLVABLE)}")
    found = subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
                           capture_output=True, text=True, timeout=60).stdout.strip()
    if found != VERSION or not (venv / "bin" / "litellm").exists():
        raise RuntimeError(f"the venv holds litellm {found or 'nothing'} and no `litellm` command")
    return note


def last_error(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.startswith("ERROR")]
    lines = lines or output.strip().splitlines()[-1:] or ["no output"]
    return lines[-1][:300]


def config(upstream_base: str, upstream_key: str, master_key: str | None = None, cache: bool = False) -> dict:
    """Model ``jev`` = ``typesafe/jev-latest`` on the zero-delay upstream; a master key and the local cache
    when asked for. Without a master key 1.110.2 refuses to start (``UnsafeMasterKeyError``) unless told
    ``dangerously_permit_weak_or_unset_master_key``."""
    settings: dict = {"model_list": [{"model_name": "jev", "litellm_params": {
        "model": "typesafe/jev-latest", "api_key": upstream_key, "api_base": upstream_base, "timeout": 10}}]}
    settings["general_settings"] = ({"master_key": master_key} if master_key else
                                    {"dangerously_permit_weak_or_unset_master_key": True})
    if cache:
        settings["litellm_settings"] = {"cache": True, "cache_params": {"type": "local"}}
    return settings


def command(venv: Venv, config_path: Path, host: str, port: int) -> list[str]:
    return [str(venv.litellm), "--config", str(config_path), "--host", host, "--port", str(port),
            "--num_workers", "1"]


def environment() -> dict[str, str]:
    """This process's environment without what would point LiteLLM at a database, Redis or a provider,
    plus the bundled price map (no fetch of the remote one at start)."""
    dropped = ("DATABASE_", "REDIS_", "LITELLM_", "PYTHONPATH", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(dropped) and not k.endswith(("_API_KEY", "_API_BASE", "_BASE_URL"))}
    return {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR",
            "LITELLM_DONT_SHOW_FEEDBACK_BOX": "True"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    args = parser.parse_args(argv)
    venv = prepare(args.venv)
    print(("ready: " if venv.ready else "unavailable: ") + venv.note)
    return 0 if venv.ready else 1


if __name__ == "__main__":
    sys.exit(main())

"""The package sources pip is configured with on this machine, as uv's options.

    python3 tools/pip_sources.py        # prints e.g. --index-strategy unsafe-best-match --find-links /opt/wheels

The Makefile installs with uv (seconds where pip takes minutes: pip resolves and unpacks one package
at a time and these machines' registry proxy sends no caching headers, so pip's cache never fills),
but uv reads none of pip's configuration. A machine that keeps packages on its own disk (a local
index, a folder of wheels such as a CPU build of torch, a constraints file) says so in pip's
configuration files or its ``PIP_*`` variables; this reads them through ``pip config list`` and
gives uv the same: the index, the extra indexes, the find-links locations and the constraints, and
pip's way of choosing among indexes (the best version from any of them). A local location that does
not exist is left out, as pip leaves it out (with a warning).

Standard library only: it runs with the interpreter that creates the venv, before anything is installed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from urllib.parse import unquote, urlparse

# pip's option name -> uv's option, for each value.
OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}
# A later section wins: pip reads ``global``, then the command's own section, then the environment.
PRECEDENCE = ("global", "install", ":env:")


def settings_of(listing: str) -> dict[str, list[str]]:
    """The values of the options above from ``pip config list``'s lines (``global.find-links='/opt/wheels'``,
    ``:env:.find-links='/opt/wheels'``), each option's from its section of highest precedence, split on
    whitespace as pip splits them."""
    found: dict[str, dict[str, list[str]]] = {}
    for line in listing.splitlines():
        key, equals, raw = line.partition("=")
        section, dot, name = key.rpartition(".")
        if not equals or not dot or name not in OPTIONS or section not in PRECEDENCE:
            continue
        value = raw.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        found.setdefault(name, {})[section] = value.split()
    return {name: next(by_section[s] for s in reversed(PRECEDENCE) if s in by_section)
            for name, by_section in found.items()}


def exists_if_local(location: str) -> bool:
    """A folder or ``file://`` URL must be on this disk; an http(s) URL is kept as it is."""
    parsed = urlparse(location)
    if parsed.scheme in ("http", "https"):
        return True
    path = unquote(parsed.path) if parsed.scheme == "file" else location
    return os.path.exists(path)


def uv_options(settings: dict[str, list[str]]) -> list[str]:
    options = ["--index-strategy", "unsafe-best-match"]
    for name, flag in OPTIONS.items():
        for value in settings.get(name, []):
            if exists_if_local(value):
                options += [flag, value]
    return options


def pip_config_listing() -> str:
    done = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                          check=False, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    return done.stdout if done.returncode == 0 else ""


def main() -> int:
    print(shlex.join(uv_options(settings_of(pip_config_listing()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""One section of docs/benchmarks.md rewritten by the benchmark that owns it; the others are kept."""

from __future__ import annotations

import os
import platform
import re
import time
from pathlib import Path
from typing import Any


def machine_env(**extra: Any) -> dict[str, Any]:
    """What every benchmark records about the run: Python, machine, CPUs, the load at the start, the date."""
    return {"python": f"{platform.python_implementation()} {platform.python_version()}",
            "machine": platform.machine(), "cpus": os.cpu_count(), "load_start": os.getloadavg(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **extra}


def replace_section(doc: Path, heading: str, text: str) -> None:
    """Replace the section that starts with ``heading`` (a ``## `` line) by ``text``; append it when absent."""
    doc.parent.mkdir(parents=True, exist_ok=True)
    current = doc.read_text() if doc.exists() else "# Benchmarks\n\n"
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    if pattern.search(current):
        updated = pattern.sub(lambda _: text.rstrip("\n") + "\n\n", current).rstrip("\n") + "\n"
    else:
        updated = current.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n"
    doc.write_text(updated)

"""Processes for the benchmarks: free ports, waiting for a server, stopping it, its memory, pinning."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def wait_for_http(url: str, proc: subprocess.Popen[bytes], deadline: float, log_path: Path | None = None) -> None:
    """Poll ``url`` until it answers 200; fail early if the process exits."""
    import urllib.error
    import urllib.request

    while time.monotonic() < deadline:
        if proc.poll() is not None:
            args = proc.args
            program = os.fsdecode(args if isinstance(args, (str, bytes, os.PathLike)) else args[0])
            raise RuntimeError(f"{program} exited with {proc.returncode} before it served:\n{log_tail(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer in time:\n{log_tail(log_path)}")


def wait_for_port(port: int, proc: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the upstream exited with {proc.returncode}")
        try:
            with socket.create_connection((HOST, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the upstream did not start in time")


def log_tail(path: Path | None, chars: int = 3000) -> str:
    if path is None or not path.exists():
        return ""
    return path.read_text(errors="replace")[-chars:]


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def rss_mib(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MiB, from /proc/<pid>/status."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0]) / 1024.0  # kB
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def pinning(enabled: bool) -> tuple[set[int], set[int]] | None:
    """(the gateway's cores, the upstream's and the client's cores), or None when not pinning."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not enabled or len(cores) < 2:
        return None
    return {cores[0]}, {cores[1]}


def pinned_to(cores: set[int] | None):
    """A ``preexec_fn`` that pins the child (and every thread it starts) to ``cores``."""
    if cores is None:
        return None
    return lambda: os.sched_setaffinity(0, cores)


@contextmanager
def this_process_on(cores: set[int] | None) -> Iterator[None]:
    """This process (the load client) on ``cores`` for the block, then back where it was: a bench run as
    a library (by its test, in a test worker) leaves its caller as it found it."""
    if cores is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def descendants(pid: int) -> list[int]:
    """``pid`` and every process under it (a server's workers), from /proc/<pid>/task/*/children."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo.extend(int(child) for child in task.read_text().split())
            except OSError:
                continue
    return found


def tree_rss_mib(pid: int) -> float:
    """VmRSS of a process and its descendants together, in MiB (shared pages counted once per process)."""
    total = 0.0
    for member in descendants(pid):
        try:
            total += rss_mib(member)[0]
        except OSError:  # gone meanwhile
            continue
    return total


def http_json(method: str, url: str, body: dict | None = None, token: str | None = None,
              timeout: float = 30) -> tuple[int, dict]:
    """(status, decoded JSON body) of one request; an HTTP error status is returned, not raised."""
    import json
    import urllib.error
    import urllib.request

    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        decoded = json.loads(raw) if raw else {}
    except ValueError:
        decoded = {"raw": raw[:300].decode(errors="replace")}
    return status, decoded if isinstance(decoded, dict) else {"value": decoded}

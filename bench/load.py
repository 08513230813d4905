"""The load client of the gateway benchmarks: keep-alive aiohttp POSTs, a fixed number in flight, each
answer checked once, latencies in milliseconds; at concurrency 1 each request to a gateway can be
interleaved with one straight to the upstream, so both series see the same moment of a noisy machine."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

from bench.zero_delay_upstream import S1_QUESTIONS

CLIENT_KEY = "bench-client"  # the Authorization bearer when a gateway asks for none


@dataclass
class Case:
    name: str
    target: str  # "upstream", "ours" or "litellm"
    path: str
    body: bytes
    concurrency: int
    total: int
    direct: Case | None = None  # the upstream case this one is compared with
    route: str = ""  # the gateway route it measures ("" for the upstream alone)
    key: str = CLIENT_KEY
    latencies: list[float] = field(default_factory=list)
    paired: list[float] = field(default_factory=list)  # direct calls interleaved with this case's (concurrency 1)
    sent: int = 0  # requests sent, warm-up included
    errors: int = 0
    first_error: str = ""
    elapsed_s: float = 0.0
    cut_short: bool = False
    round_rps: list[float] = field(default_factory=list)  # each round's requests/s (run_rounds)

    def pct(self, q: float) -> float:
        return percentile(self.latencies, q)

    @property
    def done(self) -> int:
        return len(self.latencies) + self.errors

    @property
    def rps(self) -> float:
        return self.done / self.elapsed_s if self.elapsed_s > 0 else float("nan")

    def added(self, q: float) -> float:
        """This case's percentile minus the direct call's (the interleaved ones at concurrency 1)."""
        if self.paired:
            return self.pct(q) - percentile(self.paired, q)
        return self.pct(q) - self.direct.pct(q) if self.direct is not None else float("nan")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted values; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n*q/100), at least 1
    return ordered[int(rank) - 1]


def check_answer(payload: bytes) -> str | None:
    """None when the response holds an answer for each of the three questions, else why not."""
    try:
        body = json.loads(payload)
        answers = body["answers"]
        names = set(answers) if isinstance(answers, dict) else {a.get("name") for a in answers}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"unusable body ({exc!r}): {payload[:200]!r}"
    return None if names == set(S1_QUESTIONS) else f"answers for {sorted(map(str, names))}"


async def drive(session, base: str, case: Case, total: int, deadline: float, record: bool) -> None:
    """``total`` POSTs with ``case.concurrency`` in flight, stopping at ``deadline``; unrecorded ones
    (the warm-up) raise on the first failure."""
    import aiohttp

    url = base + case.path
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {case.key}"}
    remaining = total
    checked = False

    async def one() -> None:
        nonlocal checked
        case.sent += 1
        started = time.perf_counter()
        error: str | None
        try:
            async with session.post(url, data=case.body, headers=headers) as response:
                payload = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            error = f"{type(exc).__name__}: {exc}"
        else:
            error = None if status == 200 else f"HTTP {status}: {payload[:300]!r}"
            if error is None and not checked:
                checked = True
                error = check_answer(payload)
        latency = (time.perf_counter() - started) * 1000.0
        if not record:
            if error:
                raise RuntimeError(f"{case.name}: warm-up request failed: {error}")
            return
        if error is None:
            case.latencies.append(latency)
        else:
            case.errors += 1
            case.first_error = case.first_error or error

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            if time.monotonic() >= deadline:
                case.cut_short = True
                return
            remaining -= 1
            await one()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(case.concurrency)))
    if record:
        case.elapsed_s = time.perf_counter() - started


def session(concurrency: int):
    import aiohttp

    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency * 2),
                                 timeout=aiohttp.ClientTimeout(total=30))


async def run_case(base: str, case: Case, deadline: float, warmup: int, direct_base: str = "") -> None:
    """The case's requests after ``warmup`` unrecorded ones; at concurrency 1 with a ``direct`` case,
    each request to the gateway is followed by one straight to the upstream (``direct_base``)."""
    async with session(case.concurrency) as client:
        await drive(client, base, case, max(warmup, case.concurrency), deadline, record=False)
        direct = case.direct
        if direct is None or case.concurrency != 1 or not direct_base:
            await drive(client, base, case, case.total, deadline, record=True)
            return
        twin = Case(direct.name, direct.target, direct.path, direct.body, 1, case.total)
        await drive(client, direct_base, twin, warmup, deadline, record=False)
        started = time.perf_counter()
        for _ in range(case.total):
            if time.monotonic() >= deadline:
                case.cut_short = True
                break
            await drive(client, base, case, 1, deadline, record=True)
            await drive(client, direct_base, twin, 1, deadline, record=True)
        case.elapsed_s = time.perf_counter() - started
        case.paired = twin.latencies
        case.errors += twin.errors
        case.first_error = case.first_error or twin.first_error


async def run_rounds(base: str, case: Case, deadline: float, warmup: int, direct_base: str = "",
                     rounds: int = 1) -> None:
    """``run_case`` ``rounds`` times for a concurrent case (once at concurrency 1), keeping the round
    with the median requests per second: its latencies and time become the case's, every round's
    figure is in ``case.round_rps``. A short dip of a shared machine then moves one round, not the
    figure."""
    if case.concurrency == 1 or rounds <= 1:
        await run_case(base, case, deadline, warmup, direct_base)
        case.round_rps = [case.rps]
        return
    tries = []
    for _ in range(rounds):
        one = Case(case.name, case.target, case.path, case.body, case.concurrency, case.total, case.direct,
                   case.route, case.key)
        await run_case(base, one, deadline, warmup, direct_base)
        tries.append(one)
    ordered = sorted(tries, key=lambda c: c.rps)
    median = ordered[len(ordered) // 2]
    case.latencies, case.elapsed_s, case.errors = median.latencies, median.elapsed_s, median.errors
    case.first_error = next((c.first_error for c in tries if c.first_error), "")  # from any round
    case.sent = sum(c.sent for c in tries)
    case.cut_short = any(c.cut_short for c in tries)
    case.round_rps = [c.rps for c in tries]


async def warm(base: str, cases: list[Case], count: int, deadline: float) -> int:
    """``count`` unrecorded requests of each case, one at a time (before the resident memory is read);
    how many were sent."""
    sent = 0
    async with session(1) as client:
        for case in cases:
            single = Case(case.name, case.target, case.path, case.body, 1, count, key=case.key)
            await drive(client, base, single, count, deadline, record=False)
            sent += single.sent
    return sent

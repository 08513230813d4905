"""The calibration bench's recovery part (bench/calibration.py, part 1): a real gateway in front of
``TemperedTypeSafe`` upstreams with a known miscalibration, a fit, fresh requests answered calibrated and
the report on them; plus the fit's spread on other draws and the fresh ECE under other calibrators."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import random
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.calibration import Sizes

TS_KEY = "ts-bench-calibration"
LABELS = {"calm": None, "angry": "upset", "neutral": None, "mixed": None}
CHOICE = {"type": "choice", "instructions": "Tone of the message?", "criteria": LABELS}
NOUL = {"type": "noul", "instructions": "Is this message about billing?"}
CONCURRENCY = 16
OUTCOME_BATCH = 1000  # POST /v1/outcomes takes at most 1,000 a batch


@dataclass(frozen=True)
class Scenario:
    label: str
    group: str  # its own model group (and upstream) in the one gateway
    qid: str
    question: dict[str, Any]
    sharpen: float  # the upstream's inverse temperature: the fit should find temperature = sharpen

    @property
    def kind(self) -> str:
        return "yes_no" if self.question["type"] == "noul" else "choice"


SCENARIOS = (Scenario("choice of 4, overconfident (sharpen 2.5)", "over", "tone", CHOICE, 2.5),
             Scenario("choice of 4, flattened (sharpen 1/2.5)", "flat", "tone", CHOICE, 0.4),
             Scenario("yes/no, overconfident (sharpen 2.5)", "yesno", "billing", NOUL, 2.5))


@dataclass
class Recovery:
    scenario: Scenario
    train: int
    fresh: int
    fit: dict[str, Any]
    raw: dict[str, Any]  # the fresh answers' report figures, as answered by the upstream
    calibrated: dict[str, Any]  # and as served
    applied: int  # fresh answers logged with the calibrator applied
    requests_per_s: float
    spread: list[float] = field(default_factory=list)  # offline fits on other draws (temperature, or 1 / a)
    truth: dict[str, float] = field(default_factory=dict)  # the true probabilities' figures on the same outcomes
    what_if: dict[str, float] = field(default_factory=dict)  # fresh ECE with other calibrators (see what_if)

    @property
    def method(self) -> str:
        return str(self.fit["method"])

    @property
    def fitted_temperature(self) -> float:
        """The temperature the fit found (Platt: 1 / a, its temperature-like part)."""
        params = self.fit["params"]
        return 1.0 / params["beta"] if self.method == "temperature" else 1.0 / params["a"]

    @property
    def temperature_error(self) -> float:
        return abs(self.fitted_temperature - self.scenario.sharpen) / self.scenario.sharpen


# ---- 1. recovery through a gateway ------------------------------------------------------------------


@contextlib.contextmanager
def data_dir(path: Path) -> Iterator[None]:
    """``DECISIONS_GATEWAY_DATA_DIR`` for a gateway started in this process (its outbox, its salt)."""
    before = os.environ.get("DECISIONS_GATEWAY_DATA_DIR")
    os.environ["DECISIONS_GATEWAY_DATA_DIR"] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("DECISIONS_GATEWAY_DATA_DIR", None)
        else:
            os.environ["DECISIONS_GATEWAY_DATA_DIR"] = before


def site_of(scenario: Scenario) -> str:
    from gateway.calibration.site import sites
    from translators import systemone

    return sites(systemone.parse_request({"model": scenario.group, "state": "x",
                                          "questions": {scenario.qid: scenario.question}}))[0]


def outcome_of(scenario: Scenario, state: str, rng: random.Random) -> Any:
    from tests.fakes.tempered import draw, truth

    if scenario.kind == "yes_no":
        return draw(truth(state, scenario.qid, 2), rng) == 0
    return list(LABELS)[draw(truth(state, scenario.qid, len(LABELS)), rng)]


def logged(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM decisions").fetchone()[0])


def wait_logged(db: Path, count: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while logged(db) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {logged(db)} of {count} decisions reached the database in {timeout:.0f} s")
        time.sleep(0.1)


async def ask_all(session: Any, url: str, jobs: list[tuple[Scenario, str]]) -> tuple[list[str], int]:
    """POST every (scenario, state) with ``CONCURRENCY`` in flight; their request ids, in order, and how many
    responses said a calibrator applied."""
    ids = [""] * len(jobs)
    applied = 0
    todo = iter(range(len(jobs)))

    async def worker() -> None:
        nonlocal applied
        for i in todo:
            scenario, state = jobs[i]
            body = {"model": scenario.group, "state": state, "questions": {scenario.qid: scenario.question}}
            async with session.post(url + "/v1/systemone", json=body) as response:
                text = await response.read()
                if response.status != 200:
                    raise RuntimeError(f"POST /v1/systemone answered {response.status}: {text[:300]!r}")
                ids[i] = response.headers["x-request-id"]
                applied += response.headers.get("x-decisions-calibration", "").startswith("applied")

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return ids, applied


async def post_json(session: Any, method: str, url: str, body: Any = None, params: dict | None = None) -> Any:
    async with session.request(method, url, json=body, params=params) as response:
        payload = await response.read()
        if response.status != 200:
            raise RuntimeError(f"{method} {url} answered {response.status}: {payload[:500]!r}")
        return json.loads(payload)


async def post_outcomes(session: Any, url: str, outcomes: list[dict[str, Any]]) -> None:
    for start in range(0, len(outcomes), OUTCOME_BATCH):
        batch = outcomes[start:start + OUTCOME_BATCH]
        posted = await post_json(session, "POST", url + "/v1/outcomes", {"outcomes": batch})
        assert posted["recorded"] == len(batch), posted


def outcomes_for(scenario: Scenario, states: list[str], ids: list[str], seed: str) -> list[dict[str, Any]]:
    rng = random.Random(f"{seed}-{scenario.group}")
    return [{"request_id": rid, "question": scenario.qid, "outcome": outcome_of(scenario, state, rng)}
            for state, rid in zip(states, ids, strict=True)]


def truth_measures(scenario: Scenario, states: list[str], outcomes: list[dict[str, Any]]) -> dict[str, float]:
    """ECE, Brier and log loss of the truth itself on the fresh outcomes: what a perfect calibrator would score
    on this sample (ECE's sampling floor at this n)."""
    from gateway.calibration.measures import Decision, measures
    from tests.fakes.tempered import truth

    decisions = []
    for state, posted in zip(states, outcomes, strict=True):
        if scenario.kind == "yes_no":
            q = truth(state, scenario.qid, 2)
            decisions.append(Decision((q[0], 1.0 - q[0]), 0 if posted["outcome"] is True else 1))
        else:
            decisions.append(Decision(tuple(truth(state, scenario.qid, len(LABELS))),
                                      list(LABELS).index(posted["outcome"])))
    m = measures(decisions)
    return {"ece": m.ece, "brier": m.brier, "log_loss": m.log_loss, "accuracy": m.accuracy}


def what_if(scenario: Scenario, states: list[str], outcomes: list[dict[str, Any]],
            fitted: dict[str, float]) -> dict[str, float]:
    """The fresh answers' ECE under other calibrators, recomputed here from the fake's raw probabilities and the
    same outcomes: ``fit`` (the fitted one again: it should match the report), ``exact`` (the true temperature;
    Platt a = 1 / sharpen, b = 0) and the true temperature 5 % and 10 % off each way: how much of the
    calibrated ECE the fit's error costs."""
    from gateway.calibration.fitting import Calibrator
    from gateway.calibration.measures import Decision, measures
    from tests.fakes.tempered import DECIMALS, tempered, truth

    n = 2 if scenario.kind == "yes_no" else len(LABELS)
    raw = []
    for state, posted in zip(states, outcomes, strict=True):
        p = [round(v, DECIMALS) for v in tempered(truth(state, scenario.qid, n), scenario.sharpen)]
        probabilities = (p[0], 1.0 - p[0]) if scenario.kind == "yes_no" else tuple(p)
        index = (0 if posted["outcome"] is True else 1) if scenario.kind == "yes_no" else list(LABELS).index(
            posted["outcome"])
        raw.append((probabilities, index))

    def calibrator(temperature: float) -> Calibrator:
        if scenario.kind == "yes_no":
            return Calibrator("platt", {"a": 1.0 / temperature, "b": 0.0})
        return Calibrator("temperature", {"beta": 1.0 / temperature})

    cases = {"fit": Calibrator("platt" if scenario.kind == "yes_no" else "temperature", dict(fitted))}
    for label, factor in (("exact", 1.0), ("-10%", 0.9), ("-5%", 0.95), ("+5%", 1.05), ("+10%", 1.1)):
        cases[label] = calibrator(scenario.sharpen * factor)
    return {label: measures(Decision(c.apply(p), k) for p, k in raw).ece for label, c in cases.items()}


def fit_spread(scenario: Scenario, n: int, seeds: int) -> list[float]:
    """The fitted temperature (Platt: 1 / a) of ``seeds`` offline fits, each on ``n`` outcomes drawn afresh (other
    states, other draws, other request ids: another split), as the gateway's fit does them
    (``fitting.fit_calibrator``): how far the fit moves by chance alone at this size."""
    from gateway.calibration import fitting
    from tests.fakes.tempered import DECIMALS, draw, tempered, truth

    out = []
    options = 2 if scenario.kind == "yes_no" else len(LABELS)
    for seed in range(seeds):
        rng = random.Random(f"spread-{seed}-{scenario.group}")
        samples = []
        for i in range(n):
            q = truth(f"spread {seed} message {i}", scenario.qid, options)
            p = [round(v, DECIMALS) for v in tempered(q, scenario.sharpen)]
            probabilities = (p[0], 1.0 - p[0]) if scenario.kind == "yes_no" else tuple(p)
            samples.append(fitting.Sample(probabilities, draw(q, rng), 1.0, f"spread-{seed}-{i}", 0))
        calibrator = fitting.fit_calibrator(scenario.kind, samples).calibrator
        params = calibrator.params
        out.append(1.0 / (params["beta"] if calibrator.method == "temperature" else params["a"]))
    return out


def measure_recovery(sizes: Sizes, tmp: Path, scenarios: tuple[Scenario, ...] = SCENARIOS) -> list[Recovery]:
    import aiohttp

    from tests.conftest import start_gateway
    from tests.fakes.tempered import TemperedTypeSafe

    folder = tmp / "recovery"
    folder.mkdir()
    db = folder / "gw.db"
    fakes = [TemperedTypeSafe(TS_KEY, sharpen=s.sharpen).start() for s in scenarios]
    try:
        model_list = [{"model_name": s.group, "model_info": {"calibration": "apply"},
                       "litellm_params": {"model": "typesafe/jev-latest", "api_key": TS_KEY, "api_base": fake.url,
                                          "timeout": 10}} for s, fake in zip(scenarios, fakes, strict=True)]
        with data_dir(folder / "data"):
            gateway = start_gateway({"model_list": model_list, "general_settings": {"database_url": f"sqlite:///{db}"},
                                     "router_settings": {"num_retries": 0}})
        try:
            out = asyncio.run(_recovery(gateway.url, db, sizes, scenarios, aiohttp))
        finally:
            gateway.stop()
    finally:
        for fake in fakes:
            fake.stop()
    for recovery in out:
        recovery.spread = fit_spread(recovery.scenario, sizes.train, sizes.spread_seeds)
    return out


async def _recovery(url: str, db: Path, sizes: Sizes, scenarios: tuple[Scenario, ...], aiohttp: Any) -> list[Recovery]:
    connector = aiohttp.TCPConnector(limit=CONCURRENCY * 2)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        train_states = [f"train message {i}" for i in range(sizes.train)]
        jobs = [(s, state) for s in scenarios for state in train_states]
        ids, _ = await ask_all(session, url, jobs)
        wait_logged(db, len(jobs))
        for k, scenario in enumerate(scenarios):
            mine = ids[k * sizes.train:(k + 1) * sizes.train]
            await post_outcomes(session, url, outcomes_for(scenario, train_states, mine, "train"))
        fits = [await post_json(session, "POST", url + "/calibration/fit",
                                {"model_group": s.group, "site": site_of(s)}) for s in scenarios]
        start = dt.datetime.now(dt.UTC)
        await asyncio.sleep(0.01)
        fresh_states = [f"fresh message {i}" for i in range(sizes.fresh)]
        jobs = [(s, state) for s in scenarios for state in fresh_states]
        began = time.perf_counter()
        ids, _ = await ask_all(session, url, jobs)
        rate = len(jobs) / (time.perf_counter() - began)
        wait_logged(db, len(jobs) + len(scenarios) * sizes.train)
        out = []
        for k, scenario in enumerate(scenarios):
            mine = ids[k * sizes.fresh:(k + 1) * sizes.fresh]
            fresh_outcomes = outcomes_for(scenario, fresh_states, mine, "fresh")
            await post_outcomes(session, url, fresh_outcomes)
            report = await post_json(session, "GET", url + "/calibration/report", params={
                "model_group": scenario.group, "site": site_of(scenario), "start": start.isoformat()})
            (row,) = report["sites"]
            applied = _applied_count(db, scenario.group, start)
            out.append(Recovery(scenario, sizes.train, sizes.fresh, fits[k], row["raw"], row["calibrated"], applied,
                                rate, truth=truth_measures(scenario, fresh_states, fresh_outcomes),
                                what_if=what_if(scenario, fresh_states, fresh_outcomes, fits[k]["params"])))
        return out


def _applied_count(db: Path, group: str, start: dt.datetime) -> int:
    since = start.replace(tzinfo=None).isoformat(" ")  # SQLite keeps UTC times without an offset
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM decisions WHERE model_group = ? AND calibrator_id IS NOT NULL "
                                "AND created_at >= ?", (group, since)).fetchone()[0])


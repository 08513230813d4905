"""Prometheus metrics (prometheus-client), ``decisions_gateway_`` prefixed, served at ``GET /metrics``.

One ``Metrics`` per gateway process. Every label value is bounded (gateway/observability/labels.py):
configured model groups and deployments, known providers, the gateway's routes, HTTP statuses, and
the aliases an admin gave keys and teams; never key material or request content.

The record step updates them once per request (``Metrics.record``); the children of each metric
are bound once per label tuple and kept, so a request costs a few dictionary look-ups and
increments. Gauges of state that changes without requests (cooling deployments, the spend outbox
depth) are refreshed by ``refresh`` at each scrape and every few seconds in the background.

Under ``--workers N`` the CLI points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh folder before the
workers start: each worker writes its values there and a scrape of any worker adds them all up
(``MultiProcessCollector``). Gauges say how they combine: in-flight requests and outbox depths are
summed over the live workers; cooldowns and remaining budgets are the most recent value written,
since every worker reads them from the same shared state.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from gateway.admission.errors import BudgetExceeded, RateLimited
from gateway.observability.labels import Labeller, caller_labels, route_label

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST
PREFIX = "decisions_gateway_"
REQUEST_LABELS = ("route", "model_group", "deployment", "provider", "team", "key_alias", "status")
USAGE_LABELS = ("model_group", "deployment", "provider", "team", "key_alias")
# Seconds. A request takes from a millisecond (a cache hit) to a minute (a slow upstream, its retries).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# The gateway's own time: tens of microseconds to a few milliseconds when healthy.
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.01, 0.025, 0.05, 0.1,
                    0.5)


def multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROC_ENV))


class Bound:
    """One metric's children, bound once per label tuple."""

    __slots__ = ("metric", "children")

    def __init__(self, metric: Any):
        self.metric = metric
        self.children: dict[tuple[Any, ...], Any] = {}

    def __call__(self, *labels: Any) -> Any:
        child = self.children.get(labels)
        if child is None:
            child = self.children[labels] = self.metric.labels(*labels)
        return child


class Row:
    """The children one kind of request (route, group, deployment, provider, team, alias, status)
    updates, found with one look-up; those of the upstream, tokens and spend bound at first use."""

    __slots__ = ("key", "requests", "duration", "overhead", "upstream", "tokens_in", "tokens_out", "spend")

    def __init__(self, key: tuple[Any, ...], requests: Any, duration: Any, overhead: Any):
        self.key = key
        self.requests, self.duration, self.overhead = requests, duration, overhead
        self.upstream = self.tokens_in = self.tokens_out = self.spend = None

    def bind(self, metrics: Metrics, name: str) -> Any:
        usage = self.key[1:6]  # model group, deployment, provider, team, key alias
        if name == "upstream":
            child = metrics.upstream(*usage[:3])
        elif name == "spend":
            child = metrics.spend(*usage)
        else:
            child = metrics.tokens(*usage, "input" if name == "tokens_in" else "output")
        setattr(self, name, child)
        return child


class Metrics:
    def __init__(self, registry: Any):
        self.multiprocess = multiprocess()
        # In multiprocess mode the values live in the shared folder and a scrape reads them there;
        # otherwise in this gateway's own registry (several gateways in one test process stay apart).
        self.registry = None if self.multiprocess else CollectorRegistry(auto_describe=True)
        self.labeller = Labeller(registry)
        reg = self.registry

        def counter(name: str, doc: str, labels: Iterable[str]) -> Bound:
            return Bound(Counter(PREFIX + name, doc, tuple(labels), registry=reg))

        def histogram(name: str, doc: str, labels: Iterable[str], buckets: tuple[float, ...]) -> Bound:
            return Bound(Histogram(PREFIX + name, doc, tuple(labels), registry=reg, buckets=buckets))

        def gauge(name: str, doc: str, labels: Iterable[str], mode: str) -> Bound:
            return Bound(Gauge(PREFIX + name, doc, tuple(labels), registry=reg, multiprocess_mode=mode))  # type: ignore[arg-type]

        self.requests = counter("requests", "Requests answered, by route, model group, deployment, provider, team, "
                                "key alias and HTTP status.", REQUEST_LABELS)
        self.duration = histogram("request_duration_seconds", "Total time of a request in the gateway, from "
                                  "arrival to its answer.", ("route", "model_group"), LATENCY_BUCKETS)
        self.upstream = histogram("upstream_duration_seconds", "Time a request spent waiting on upstream calls "
                                  "(every attempt).", ("model_group", "deployment", "provider"), LATENCY_BUCKETS)
        self.overhead = histogram("overhead_duration_seconds", "The gateway's own time in a request: the total "
                                  "minus the time waiting on upstreams.", ("route",), OVERHEAD_BUCKETS)
        self.tokens = counter("tokens", "Tokens the upstreams counted, by token_type (input, output).",
                              (*USAGE_LABELS, "token_type"))
        self.spend = counter("spend_usd", "Cost of the answers, in US dollars.", USAGE_LABELS)
        self.cache_hits = counter("cache_hits", "Questions answered from the cache.", ("model_group",))
        self.cache_misses = counter("cache_misses", "Questions looked up in the cache and not found.",
                                    ("model_group",))
        self.cache_saved = counter("cache_saved_usd", "What the cache hits would have cost upstream, in US dollars.",
                                   ("model_group",))
        self.retries = counter("retries", "Upstream retries.", ("model_group",))
        self.fallbacks = counter("fallbacks", "Fallback groups tried.", ("model_group",))
        self.hedges = counter("hedges", "Requests that sent a hedged second upstream call.", ("model_group",))
        self.rate_limited = counter("rate_limited", "Requests refused over a key's, team's or user's rate "
                                    "limit, by scope (key, team, user) and limit (rpm_limit, tpm_limit, "
                                    "max_parallel_requests).",
                                    ("scope", "limit", "team", "key_alias"))
        self.budget_exceeded = counter("budget_exceeded", "Requests refused over a key's, team's or user's budget.",
                                       ("scope", "team", "key_alias"))
        self.key_budget = gauge("key_budget_remaining_usd", "What is left of a key's budget in its period, as of "
                                "its last request.", ("key_alias", "team"), "mostrecent")
        self.team_budget = gauge("team_budget_remaining_usd", "What is left of a team's budget in its period, as "
                                 "of its last request.", ("team",), "mostrecent")
        self.cooling = gauge("deployment_cooling_down", "1 while a deployment is cooling down (not picked), else 0.",
                             ("model_group", "deployment", "provider"), "mostrecent")
        self.calibration_ece = gauge("calibration_ece", "Expected calibration error (15 equal-width bins of the top-1 "
                                     "probability) of the last day's answers with outcomes, per model group and "
                                     "configured site (all: every site of the group), for the raw and the served "
                                     "probabilities.", ("model_group", "site", "probabilities"), "mostrecent")
        self.calibration_brier = gauge("calibration_brier", "Mean Brier score of the last day's answers with outcomes, "
                                       "labelled as calibration_ece.", ("model_group", "site", "probabilities"),
                                       "mostrecent")
        self.in_flight = Gauge(PREFIX + "requests_in_flight", "Requests being answered now.", registry=reg,
                               multiprocess_mode="livesum")
        self._rows: dict[tuple[Any, ...], Row] = {}
        self.outbox = Gauge(PREFIX + "spend_outbox_depth", "Spend rows waiting in the durable outbox for the "
                            "database.", registry=reg, multiprocess_mode="livesum")

    def calibration(self, figures: Iterable[tuple[str, str, str, float, float]]) -> None:
        """The calibration gauges: (model group, site label, raw | calibrated, ECE, Brier) each; the group's
        label as the other metrics bound it (an unconfigured group is not a label of its own)."""
        for group, site, probabilities, ece, brier in figures:
            label = self.labeller.group(group)
            self.calibration_ece(label, site, probabilities).set(ece)
            self.calibration_brier(label, site, probabilities).set(brier)

    # ---- per request -------------------------------------------------------------------------------

    def record(self, ctx: Any, usage: Any, total_s: float, upstream_s: float, hits: int, misses: int,
               saved: float | None) -> None:
        """One finished request; ``usage`` is what it paid for (cache hits excluded)."""
        labeller = self.labeller
        group = labeller.group(ctx.model_group)
        deployment, provider = labeller.deployment(ctx.deployment)
        alias, team = caller_labels(ctx.identity)
        key = (route_label(ctx.route), group, deployment, provider, team, alias, ctx.status)
        row = self._rows.get(key) or self._row(key)
        row.requests.inc()
        row.duration.observe(total_s)
        row.overhead.observe(max(0.0, total_s - upstream_s))
        if upstream_s:
            (row.upstream or row.bind(self, "upstream")).observe(upstream_s)
        if usage is not None:
            if usage.input_tokens:
                (row.tokens_in or row.bind(self, "tokens_in")).inc(usage.input_tokens)
            if usage.output_tokens:
                (row.tokens_out or row.bind(self, "tokens_out")).inc(usage.output_tokens)
        if ctx.cost:
            (row.spend or row.bind(self, "spend")).inc(ctx.cost)
        if hits:
            self.cache_hits(group).inc(hits)
            if saved:
                self.cache_saved(group).inc(saved)
        if misses:
            self.cache_misses(group).inc(misses)
        if ctx.retries:
            self.retries(group).inc(ctx.retries)
        if ctx.fallbacks:
            self.fallbacks(group).inc(ctx.fallbacks)
        if ctx.hedged:
            self.hedges(group).inc()
        error = ctx.error
        if error is not None:
            if isinstance(error, RateLimited):
                self.rate_limited(error.scope, error.limit, team, alias).inc()
            elif isinstance(error, BudgetExceeded):
                self.budget_exceeded(error.scope, team, alias).inc()
        if ctx.settled is not None:
            self.budgets(ctx.settled, ctx.cost, alias, team)

    def _row(self, key: tuple[Any, ...]) -> Row:
        route, group = key[0], key[1]
        row = self._rows[key] = Row(key, self.requests(*key), self.duration(route, group), self.overhead(route))
        return row

    def budgets(self, ticket: Any, cost: float | None, alias: str, team: str) -> None:
        """The remaining budgets from the ticket's budget holds: the period's spend and the
        reservations in flight (``total``, after this request's worst case, or after it settled)
        against the budget, with this request's worst case replaced by its true cost (kept when unknown)."""
        for hold in ticket.holds:
            if hold.kind != "budget":
                continue
            left = (hold.limit - hold.total) / 1e6
            if cost is not None and hold.spent is None:  # not settled yet: this request's true cost for its hold
                left += hold.amount / 1e6 - cost
            if hold.scope.kind == "key":
                self.key_budget(alias, team).set(left)
            elif hold.scope.kind == "team":
                self.team_budget(team).set(left)

    # ---- state gauges and the scrape -----------------------------------------------------------------

    async def refresh(self, health: Any, outbox_depth: Callable[[], int] | None) -> None:
        """The gauges of state that changes between requests: cooldowns (from the shared state, which
        every worker reads alike) and this process's spend outbox depth."""
        if outbox_depth is not None:
            self.outbox.set(outbox_depth())
        labeller = self.labeller
        deployments = labeller.registry.deployments
        cooling: dict[tuple[str, str, str], int] = {}
        for dep, (reason, _) in zip(deployments, await health.cooldowns(deployments)):  # one round trip
            labels = (labeller.group(dep.model_name), *labeller.deployment(dep))
            cooling[labels] = max(cooling.get(labels, 0), 0 if reason is None else 1)  # entries sharing a name
        for labels, value in cooling.items():
            self.cooling(*labels).set(value)

    def render(self) -> bytes:
        if self.multiprocess:
            from prometheus_client import multiprocess as mp

            registry = CollectorRegistry()
            mp.MultiProcessCollector(registry)
            return generate_latest(registry)
        assert self.registry is not None
        return generate_latest(self.registry)

    def follow(self, registry: Any) -> None:
        """A new registry (config reload): label values from its groups and deployments from now on."""
        if registry is not self.labeller.registry:
            self.labeller = Labeller(registry)

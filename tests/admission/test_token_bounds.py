"""The worst case a budget reserves (gateway/spend/estimate.py): images estimated, the ratio of
counted to estimated tokens learned per deployment and content kind as a decaying high quantile, so
one outlier moves it by at most one bounded step and fades; a deployment that never answered has
no bound (its requests then go one at a time against a budget)."""

from __future__ import annotations

import pytest

from gateway.spend.estimate import DOWN, IMAGE_TOKENS, MARGIN, STEP, Estimate, TokenRatios, bounds, estimate
from providers.base import Deployment
from translators import systemone
from translators.ir import DecisionRequest

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
CHEAP = Deployment("jev", "typesafe", "jev-latest", id="cheap", input_cost_per_token=1e-6)
DEAR = Deployment("jev", "typesafe", "jev-latest", id="dear", input_cost_per_token=1e-5)
TEXT = Estimate(100, "text")


def request(with_image: bool) -> DecisionRequest:
    body = {"model": "jev", "state": "Is the parcel damaged? <image:p>" if with_image else "Is the parcel damaged?",
            "questions": {"damaged": {"type": "noul", "instructions": "Damaged?"}}}
    if with_image:
        body["assets"] = {"<image:p>": {"format": "png", "data_base64": PNG}}
    return systemone.parse_request(body, None, None)


def test_images_are_estimated_and_their_kind_is_learned_apart():
    plain, pictured = estimate(request(False)), estimate(request(True))
    assert plain.kind == "text" and pictured.kind == "images"
    assert pictured.tokens >= plain.tokens + IMAGE_TOKENS  # a 1x1 image is not 0 tokens
    ratios = TokenRatios()
    ratios.observe(CHEAP, Estimate(100, "text"), 120)
    ratios.observe(CHEAP, pictured, 50 * pictured.tokens)  # an upstream that counts images very differently
    assert ratios.ratio(CHEAP, "text") == pytest.approx(1.2)  # text's bound did not move at all
    assert ratios.ratio(CHEAP, "images") == pytest.approx(50.0)


def test_one_outlier_moves_the_bound_by_at_most_one_step_and_it_fades():
    ratios = TokenRatios()
    for _ in range(30):
        ratios.observe(CHEAP, TEXT, 120)
    before = ratios.worst_tokens(CHEAP, TEXT)
    assert before == 150  # 1.2 with the margin
    ratios.observe(CHEAP, TEXT, 777_000)  # one tenant's request the upstream counted 6,475 times over
    after = ratios.worst_tokens(CHEAP, TEXT)
    assert after is not None and after <= before * STEP + 1
    for _ in range(10):  # ordinary answers, from anyone
        ratios.observe(CHEAP, TEXT, 120)
    assert ratios.ratio(CHEAP, "text") == pytest.approx(max(1.2, 1.2 * STEP / DOWN**10))
    for _ in range(30):
        ratios.observe(CHEAP, TEXT, 120)
    assert ratios.worst_tokens(CHEAP, TEXT) == before  # faded away
    # many outliers in a row are a real change: the bound follows, one step an answer
    for n in range(1, 4):
        ratios.observe(CHEAP, TEXT, 777_000)
        assert ratios.ratio(CHEAP, "text") == pytest.approx(1.2 * STEP**n)


def test_a_high_quantile_keeps_most_answers_under_the_bound():
    ratios = TokenRatios()
    counts = [100 + (37 * i) % 100 for i in range(2000)]  # 1.00 to 1.99 times the estimate, spread evenly
    for counted in counts:
        ratios.observe(CHEAP, TEXT, counted)
    ratio = ratios.ratio(CHEAP, "text")
    assert ratio is not None
    above = sum(counted > ratio * TEXT.tokens for counted in counts[-500:]) / 500
    assert 0.02 <= above <= 0.25  # about a tenth above the quantile, none above it with the margin
    assert all(counted <= ratio * MARGIN * TEXT.tokens for counted in counts[-500:])


def test_the_worst_case_is_the_dearest_reachable_deployment_and_unknown_until_one_answered():
    ratios = TokenRatios()
    tokens, worst = bounds(ratios, TEXT, [CHEAP, DEAR])
    assert worst is None and tokens == 500  # cold: no bound, one token a character for the tpm
    ratios.observe(CHEAP, TEXT, 600)
    tokens, worst = bounds(ratios, TEXT, [CHEAP, DEAR])  # DEAR never answered: at CHEAP's ratio, 6
    assert tokens == 750 and worst == pytest.approx(750 * 1e-5)
    ratios.observe(DEAR, TEXT, 100)
    tokens, worst = bounds(ratios, TEXT, [CHEAP, DEAR])
    assert tokens == 750 and worst == pytest.approx(max(750 * 1e-6, 125 * 1e-5))
    fallback = Deployment("other", "typesafe", "jev-preview", id="fallback", input_cost_per_token=1e-5)
    fresh = TokenRatios()
    fresh.observe(CHEAP, TEXT, 110)
    assert bounds(fresh, TEXT, [CHEAP, fallback])[1] == pytest.approx(500 * 1e-5)  # one token a character, at least
    unpriced = Deployment("other", "openrouter", "some/model", id="unpriced")
    ratios.observe(unpriced, TEXT, 100)
    assert bounds(ratios, TEXT, [CHEAP, unpriced])[1] is None


def test_an_unpriced_deployment_whose_upstream_reports_the_cost_learns_a_bound_too():
    ratios = TokenRatios()
    reported = Deployment("router", "openrouter", "some/model", id="reported")
    assert bounds(ratios, TEXT, [reported])[1] is None
    ratios.observe(reported, TEXT, 120, cost_usd=0.002)
    assert bounds(ratios, TEXT, [reported])[1] == pytest.approx(0.002 * MARGIN)
    ratios.observe(reported, TEXT, 120, cost_usd=5.0)  # one outlier: one bounded step
    assert bounds(ratios, TEXT, [reported])[1] == pytest.approx(0.002 * STEP * MARGIN)
    ratios.observe(CHEAP, TEXT, 120, cost_usd=5.0)  # a priced deployment's own price is the bound
    assert ratios.usd_per_token(CHEAP, "text") is None

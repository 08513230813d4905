"""What admission refuses with: ``RateLimited`` (429), ``BudgetExceeded`` (400, LiteLLM's status) and
``LimitsUnavailable`` (503, the shared state is away and the policy is fail_closed).

Every wire renders them as it renders any ``DecisionError``. Messages name the limit (key, team or user,
which limit, its value) and never carry key material: a key is named by its alias, its display
prefix, or not at all.
"""

from __future__ import annotations

from translators.errors import DecisionError


class RateLimited(DecisionError):
    """429 ``rate_limit_error``: over an rpm, tpm or max_parallel_requests limit. ``headers`` holds
    ``Retry-After`` (whole seconds) and the ``x-ratelimit-*`` figures; ``limit`` names what refused
    (``"rpm_limit"``, ``"tpm_limit"`` or ``"max_parallel_requests"``) and ``scope`` whose it is
    (``"key"``, ``"team"`` or ``"user"``)."""

    def __init__(self, message: str, *, scope: str, limit: str, headers: dict[str, str]):
        super().__init__(status=429, message=message, loc=None, type="rate_limit_error",
                         code="rate_limit_exceeded", headers=headers)
        self.scope = scope
        self.limit = limit


class BudgetExceeded(DecisionError):
    """400 ``budget_exceeded`` (LiteLLM answers a spent budget with 400): this request's worst-case
    cost does not fit in what is left of the key's, the team's or the user's ``max_budget``."""

    def __init__(self, message: str, *, scope: str):
        super().__init__(status=400, message=message, loc=None, type="budget_exceeded", code="budget_exceeded")
        self.scope = scope


class LimitsUnavailable(DecisionError):
    """503: the shared state (Redis) cannot be reached and the policy for this kind of limit is
    ``fail_closed``; ``what`` is ``"rate_limits"`` or ``"budgets"``."""

    def __init__(self, message: str, *, what: str):
        super().__init__(status=503, message=message, loc=None, type="service_unavailable",
                         code=f"{what}_unavailable", headers={"Retry-After": "1"})
        self.what = what

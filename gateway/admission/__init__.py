"""Admission: the rate limits and budgets of keys and teams, reserved before a call and settled after.

- ``admission.py``: ``Admission(state)``: ``admit`` (every check at once, atomic in the shared
  state), ``settle``, ``release``.
- ``ticket.py``: ``Ticket``, what ``admit`` reserved, and the ``x-ratelimit-*`` headers.
- ``budgets.py``: budget amounts in micro-dollars and budget periods.
- ``errors.py``: ``RateLimited`` (429), ``BudgetExceeded`` (400), ``LimitsUnavailable`` (503).
"""

"""Spend: what a call costs, and the durable row each request leaves.

- ``cost.py``: ``response_cost`` from usage and prices, ``cost_bound`` / ``worst_case_cost``, the built-in price
  table (pure).
- ``estimate.py``: a request's input tokens estimated (images included) and the learned bound on them, per
  deployment and content kind (``TokenRatios``).
- ``log.py``: ``SpendLog``, the record step's spend row into the durable outbox, drained to the database.
"""

"""Spend: what a call costs, and the durable row each request leaves.

- ``cost.py``: ``response_cost`` from usage and prices, ``worst_case_cost``, the built-in price table (pure).
- ``log.py``: ``SpendLog``, the record step's spend row into the durable outbox, drained to the database.
"""

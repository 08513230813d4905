"""Renamed to ``providers.http_json``; kept only for ``gateway/passthrough.py``'s ``join_url`` import.

Delete this module once that import reads ``from providers.http_json import join_url``.
"""

from providers.http_json import join_url

__all__ = ["join_url"]

"""The pass-throughs: Laya's, Bespoke's and TypeSafe's own APIs relayed as they are.

- ``passthrough.py``: the routes, ``PassthroughSettings`` (read once at start), the steps ``relay``
  and ``settle`` (run by the one pipeline).
- ``policy.py``: which paths and methods may go upstream, the headers forwarded and relayed (pure).
"""

"""The pass-throughs: Laya's, Bespoke's and TypeSafe's own APIs relayed as they are.

- ``passthrough.py``: the routes, ``PassthroughSettings`` (read once at start), the steps ``relay``
  and ``price`` (run by the one pipeline).
- ``admit.py``: the key's promises on a pass-through: the model it names, its limits and budget
  (the steps ``authorize``, ``admit``, ``settle``).
- ``policy.py``: which paths and methods may go upstream, the headers forwarded and relayed (pure).
"""

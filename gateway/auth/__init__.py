"""Who is calling: virtual keys (``keys.py``), their cache (``cache.py``), the records of keys and teams
and the identity built from them (``records.py``, data), their database rows (``store.py``, which
reads and writes those records), the authenticator over the store (``identity.py``), budget
durations (``durations.py``)."""

"""Who is calling: virtual keys (``keys.py``), their cache (``cache.py``), identities (``identity.py``),
the database rows of keys and teams (``store.py``), budget durations (``durations.py``)."""

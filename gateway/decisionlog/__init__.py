"""The decision log: every answered question recorded with its request's spend row (``rows.py``), per the
capture level and calibration switch of its group, key and team (``settings.py``)."""

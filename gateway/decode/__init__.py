"""Request decoding: the bytes a client sent -> a JSON object and its multipart asset parts.

- ``body.py``: ``decode_body`` (JSON, zstd, gzip, multipart; size, depth and part caps, duplicate
  keys), reading a body under its cap and deadline, the bounded pool for heavy decodes.
- ``repeats.py``: ``marking_repeats``, the JSON object hook that marks an object repeating a key.
- ``multipart.py``: ``split_multipart``, a multipart/form-data body -> its parts, within the caps.
"""

"""Upstream calls: one attempt at one deployment, and the client that carries it.

- ``http_client.py``: ``HttpClient``, the gateway's own HTTP/1.1 client (pools per origin).
- ``upstream.py``: ``Upstream.send(UpstreamRequest) -> UpstreamResponse`` over it; ``local://`` in process.
- ``call.py``: ``fit`` (the pre-call filter), ``call`` (build, send, parse, normalise).
- ``split.py``: a request over a deployment's question limit split in chunks, the answers merged (pure).
"""

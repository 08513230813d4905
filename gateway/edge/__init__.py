"""The HTTP edge: the app and its routes, the server's protocol and processes.

- ``app.py``: ``create_app(config)``, the routes and middleware together, start and shutdown.
- ``routes.py``: the decision routes (path -> wire -> ``Pipeline.run``).
- ``validate.py``: ``POST /v1/decisions/validate`` and ``/v1/systemone/validate``.
- ``info_routes.py``: ``/v1/models``; ``ui.py``: the admin UI at ``/ui``.
- ``request_id.py``: the ``x-request-id`` middleware; ``cross_site.py``: browser requests from other
  origins refused, CORS for ``allowed_origins``; ``slashes.py``: the trailing-slash redirect, relative;
  ``docs.py``: ``/docs``, Swagger UI from the package under a CSP.
- ``http_protocol.py``: uvicorn's protocol with a request-header deadline.
- ``workers.py``: ``--workers N`` (uvicorn's ``Multiprocess``, SIGHUP forwarded, SIGTERM).
"""

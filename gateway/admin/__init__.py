"""The admin API (LiteLLM's paths and field names): keys (``keys.py``), teams and their members
(``teams.py``), users (``users.py``), spend (``spend.py``), one set of operations under them
(``service.py``) that the CLI (``cli.py``) shares.

``admin_router()`` is what the app includes. The routes read ``config``, ``db``, ``shared`` (and
``auth`` when present) from ``request.app.state.gateway``; see ``common.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI (cli.py) imports this package without the web stack
    from fastapi import APIRouter


def admin_router() -> APIRouter:
    """Every admin route: ``/key/*``, ``/team/*``, ``/user/*``, ``/v2/team/list``, ``/spend/logs`` (and
    ``/v2``, ``/ui``), ``/global/spend/report``, ``/model/info``, ``/model_group/info``."""
    from fastapi import APIRouter

    from gateway.admin import calibration, keys, models, spend, teams, users

    router = APIRouter()
    router.include_router(keys.router)
    router.include_router(teams.router)
    router.include_router(users.router)
    router.include_router(spend.router)
    router.include_router(models.router)
    router.include_router(calibration.router)
    return router

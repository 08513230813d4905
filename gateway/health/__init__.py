"""Health that tells the truth and bills nothing: liveliness, readiness (the database, Redis and the
``local/`` models, each checked and named), and the providers' health from real traffic.

``routes.py`` (the routes and who may read what), ``readiness.py`` (the checks and the degraded
modes), ``providers.py`` (the deployments' last outcomes and cooldowns; billed probes only when
asked), ``local_models.py`` (each ``local/`` model's load state).
"""

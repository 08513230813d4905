"""The config file and what it declares, read once at start (and again by a reload).

- ``errors.py``: ``ConfigError``, the one error of an unusable config, listing every problem (each names
  its entry), and ``Problems``, the collector of one load, with "did you mean" for unknown keys.
- ``loader.py``: the LiteLLM-shaped YAML file -> ``GatewayConfig`` (``load_config``), every entry checked.
- ``entries.py``: one ``model_list`` entry -> a ``Deployment``, each of its problems recorded.
- ``credentials.py``: deployments without the key their provider needs (refused, or unconfigured with
  ``general_settings.allow_missing_keys``, then a 503 naming the setting).
- ``keys.py``: the LiteLLM config keys the gateway accepts.
- ``limits.py``: ``LimitsSettings``, the caps on what a client or an upstream may send (pure).
- ``registry.py``: ``ModelRegistry``, the one owner of the model groups the config declares.

The loader checks each feature's own settings at load (``router/settings.py``,
``cache/settings.py``, ``shared_state/factory.py``, ``edge/cross_site.py``, ``db/engine.py``), importing
them when it does; those import only
``errors.py`` and ``registry.py`` of this package.
"""

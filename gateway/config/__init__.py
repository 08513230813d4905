"""The config file and what it declares, read once at start (and again by a reload).

- ``errors.py``: ``ConfigError``, the one error of an unusable config (it names the entry).
- ``loader.py``: the LiteLLM-shaped YAML file -> ``GatewayConfig`` (``load_config``), every entry checked.
- ``keys.py``: the LiteLLM config keys the gateway accepts.
- ``limits.py``: ``LimitsSettings``, the caps on what a client or an upstream may send (pure).
- ``registry.py``: ``ModelRegistry``, the one owner of the model groups the config declares.

The loader checks each feature's own settings at load (``router/settings.py``,
``cache/settings.py``, ``shared_state/factory.py``), importing them when it does; those import only
``errors.py`` and ``registry.py`` of this package.
"""

"""The config file and what it declares, read once at start (and again by a reload).

- ``loader.py``: the LiteLLM-shaped YAML file -> ``GatewayConfig`` (``load_config``), every entry checked.
- ``keys.py``: the LiteLLM config keys the gateway accepts.
"""

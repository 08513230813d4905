"""decisions-gateway: the proxy. ``gateway.decisions`` / ``gateway.adecisions`` are the Python API."""

__version__ = "0.1.0"

_SDK_NAMES = ("decisions", "adecisions")


def __getattr__(name: str):
    # The Python API lives in gateway/sdk.py; imported on first use so `import gateway` stays light.
    if name in _SDK_NAMES:
        from gateway import sdk

        return getattr(sdk, name)
    raise AttributeError(f"module 'gateway' has no attribute {name!r}")

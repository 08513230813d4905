"""decisions-gateway: the proxy."""

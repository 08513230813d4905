"""The one error of an unusable config; below the loader and every feature's settings that raise it."""

from __future__ import annotations


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the entry and the problem."""

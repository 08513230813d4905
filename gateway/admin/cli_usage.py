"""What the admin CLI's modes share without importing each other: a usage mistake, and telling a key
or a key's id from an alias (gateway/admin/cli.py prints; direct.py and remote.py run the commands)."""

from __future__ import annotations

import re


class Usage(Exception):
    """A mistake in the command line or the config: exit status 2."""


def is_key_or_id(text: str) -> bool:
    """A key (``sk-...``) or a key's id (64 hex digits; gateway.auth.keys, which opens no database here)."""
    return text.startswith("sk-") or re.fullmatch(r"[0-9a-f]{64}", text) is not None

"""Key material: making virtual keys, hashing them with the server's secret, reading them from headers.

A virtual key is ``sk-`` followed by 256 bits of randomness (``secrets.token_urlsafe(32)``, 43
characters). It is shown once, when it is made; the database keeps only its keyed hash,
HMAC-SHA256 under a server secret, so a copy of the database alone does not let anyone test
guesses (LiteLLM keeps a plain sha256 of a 128-bit key).

The server secret (the "salt") comes from, in order: ``general_settings.salt_key``, the
``DECISIONS_GATEWAY_SALT_KEY`` variable, or the file ``salt.key`` in the data directory
(``DECISIONS_GATEWAY_DATA_DIR``, else ``$XDG_DATA_HOME/decisions-gateway``, else
``~/.local/share/decisions-gateway``), made on the first start with mode 0600 and read back on
later ones. Changing it makes every stored key unusable. The hash key is derived from it with a
label, so the salt itself is never the HMAC key of anything else.

Nothing here logs, and no error message carries key material.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gateway.db.engine import data_dir  # the data directory, where the database file lives too

log = logging.getLogger("gateway.auth")

KEY_PREFIX = "sk-"
KEY_RANDOM_BYTES = 32  # 256 bits
MAX_KEY_CHARS = 256  # longer header values are refused before any hashing
SALT_ENV = "DECISIONS_GATEWAY_SALT_KEY"
MASTER_KEY_ENV = "DECISIONS_GATEWAY_MASTER_KEY"
SALT_FILE = "salt.key"
MIN_SALT_CHARS = 16
_HASH_LABEL = b"decisions-gateway virtual key hash v1"
_HASH_ID = re.compile(r"[0-9a-f]{64}")
# What a key may contain: the token_urlsafe alphabet, plus the printable ASCII a master key may use.
_KEY_CHARS = re.compile(r"[\x21-\x7e]+")


class SecretError(RuntimeError):
    """The server secret cannot be read or made; the message names the file, never its content."""


def generate_key() -> str:
    """A new virtual key: ``sk-`` + 256 random bits, URL-safe base64 (46 characters in all)."""
    return KEY_PREFIX + secrets.token_urlsafe(KEY_RANDOM_BYTES)


def display_prefix(key: str) -> str:
    """What may be shown of a key after its creation: ``sk-`` and its next four characters (24 bits)."""
    return key[: len(KEY_PREFIX) + 4]


class KeyHasher:
    """HMAC-SHA256 of key material under a key derived from the server secret."""

    __slots__ = ("_key",)

    def __init__(self, secret: bytes):
        if not secret:
            raise SecretError("the server secret (salt key) is empty")
        self._key = hmac.new(secret, _HASH_LABEL, hashlib.sha256).digest()

    def hash(self, key: str) -> str:
        """The 64-hex-digit id a key is stored and found under."""
        return hmac.new(self._key, key.encode("utf-8"), hashlib.sha256).hexdigest()

    def __repr__(self) -> str:  # never the secret
        return "KeyHasher(<secret>)"


def is_hash_id(value: str) -> bool:
    """True for a stored key id (64 lowercase hex digits), as opposed to a key."""
    return _HASH_ID.fullmatch(value) is not None


def looks_like_key(value: str) -> bool:
    """Plausible key material: printable ASCII without spaces, at most ``MAX_KEY_CHARS`` long."""
    return 0 < len(value) <= MAX_KEY_CHARS and _KEY_CHARS.fullmatch(value) is not None


def secrets_equal(a: str, b: str) -> bool:
    """Constant-time comparison of two secrets (any characters)."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    """The key a caller sent: ``Authorization: Bearer <key>`` (a bare ``Authorization: <key>`` too),
    else ``x-api-key``, else ``api-key``. None when none of them is present or all are blank.

    ``headers`` must look names up case-insensitively (Starlette's ``Headers`` does)."""
    auth = headers.get("authorization")
    if auth is not None and auth.strip():
        value = auth.strip()
        scheme, _, rest = value.partition(" ")
        if scheme.lower() == "bearer":
            value = rest.strip()
        return value or None
    for name in ("x-api-key", "api-key"):
        other = headers.get(name)
        if other is not None and other.strip():
            return other.strip()
    return None


# ---- the server secret --------------------------------------------------------------------------


def load_secret(general_settings: Mapping[str, Any] | None = None,
                environ: Mapping[str, str] | None = None) -> bytes:
    """The server secret: ``general_settings.salt_key``, ``DECISIONS_GATEWAY_SALT_KEY``, or the salt file."""
    environ = os.environ if environ is None else environ
    configured = (general_settings or {}).get("salt_key")
    where = "general_settings.salt_key"
    if configured in (None, ""):
        configured, where = environ.get(SALT_ENV), SALT_ENV
    if configured not in (None, ""):
        text = str(configured)
        if len(text) < MIN_SALT_CHARS:
            raise SecretError(f"{where} must be at least {MIN_SALT_CHARS} characters long")
        return text.encode("utf-8")
    return read_or_create_salt(data_dir(environ) / SALT_FILE)


def read_or_create_salt(path: Path) -> bytes:
    """The salt in ``path``; made (mode 0600, all at once) when the file does not exist yet.

    The new salt is written to a temporary file opened with ``O_CREAT | O_EXCL`` and mode 0600,
    then linked to ``path``, which fails if another process made it first; then the winner's salt
    is read. No reader ever sees a partly written file."""
    try:
        return _read_salt(path)
    except FileNotFoundError:
        pass
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(secrets.token_urlsafe(KEY_RANDOM_BYTES).encode("ascii") + b"\n")
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(tmp, path)
                log.info("made a new server secret in %s (keep it: stored keys are hashed with it)", path)
            except FileExistsError:
                pass  # another process made it first: use theirs
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise SecretError(f"cannot make the server secret {path}: {exc.strerror or type(exc).__name__}; "
                          f"set {SALT_ENV} or DECISIONS_GATEWAY_DATA_DIR") from None
    return _read_salt(path)


def _read_salt(path: Path) -> bytes:
    try:
        mode = path.stat().st_mode
        data = path.read_bytes().strip()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SecretError(f"cannot read the server secret {path}: {exc.strerror or type(exc).__name__}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("the server secret %s can be read by other users (mode %o); chmod 600 it", path,
                    stat.S_IMODE(mode))
    if len(data) < MIN_SALT_CHARS:
        raise SecretError(f"the server secret {path} is empty or too short; restore it from a backup "
                          "(a new one would make every stored key unusable)")
    return data


def master_key_of(general_settings: Mapping[str, Any] | None = None,
                  environ: Mapping[str, str] | None = None) -> str | None:
    """``general_settings.master_key``, else ``DECISIONS_GATEWAY_MASTER_KEY``; None when neither is set."""
    environ = os.environ if environ is None else environ
    value = (general_settings or {}).get("master_key") or environ.get(MASTER_KEY_ENV)
    return str(value) if value else None

"""Key material: 256-bit keys, HMAC-SHA256 (not a plain sha256) under the server secret, the salt file
(0600, made once, stable across restarts and concurrent first starts), and reading keys from headers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import stat
import threading
from pathlib import Path

import pytest

from gateway.auth.keys import (
    SALT_FILE,
    KeyHasher,
    SecretError,
    display_prefix,
    generate_key,
    is_hash_id,
    key_from_headers,
    load_secret,
    looks_like_key,
    master_key_of,
    read_or_create_salt,
)


def test_a_key_is_sk_and_256_random_bits():
    keys = {generate_key() for _ in range(200)}
    assert len(keys) == 200
    for key in keys:
        assert key.startswith("sk-")
        body = key[3:]
        assert len(body) == 43  # token_urlsafe(32): 32 bytes, base64url without padding
        assert len(base64.urlsafe_b64decode(body + "=")) == 32
        assert looks_like_key(key)


def test_the_hash_is_an_hmac_under_the_secret_not_a_plain_sha256():
    key = generate_key()
    a, b = KeyHasher(b"first secret, long enough"), KeyHasher(b"second secret, long enough")
    assert a.hash(key) != b.hash(key)
    assert a.hash(key) == KeyHasher(b"first secret, long enough").hash(key)
    assert a.hash(key) != hashlib.sha256(key.encode()).hexdigest()  # LiteLLM's scheme
    assert a.hash(key) != hmac.new(b"first secret, long enough", key.encode(), hashlib.sha256).hexdigest()
    derived = hmac.new(b"first secret, long enough", b"decisions-gateway virtual key hash v1", hashlib.sha256).digest()
    assert a.hash(key) == hmac.new(derived, key.encode(), hashlib.sha256).hexdigest()  # HMAC-SHA256, derived key
    assert is_hash_id(a.hash(key)) and not is_hash_id(key)
    assert "first secret" not in repr(a)


def test_an_empty_secret_is_refused():
    with pytest.raises(SecretError):
        KeyHasher(b"")


def test_display_prefix_shows_four_characters_after_sk():
    key = generate_key()
    assert display_prefix(key) == key[:7] and len(display_prefix(key)) == 7


def test_salt_file_is_made_0600_and_read_back_the_same(tmp_path: Path):
    env = {"DECISIONS_GATEWAY_DATA_DIR": str(tmp_path / "data")}
    first = load_secret({}, env)
    path = tmp_path / "data" / SALT_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(first) >= 43
    assert load_secret({}, env) == first  # a restart reads the same secret
    key = generate_key()
    assert KeyHasher(load_secret({}, env)).hash(key) == KeyHasher(first).hash(key)
    assert [p.name for p in path.parent.iterdir()] == [SALT_FILE]  # no temporary file left behind


def test_concurrent_first_starts_agree_on_one_salt(tmp_path: Path):
    path = tmp_path / "salt.key"
    results: list[bytes] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        barrier.wait()
        results.append(read_or_create_salt(path))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1 and results[0] == path.read_bytes().strip()


def test_configured_salt_wins_and_writes_no_file(tmp_path: Path):
    env = {"DECISIONS_GATEWAY_DATA_DIR": str(tmp_path), "DECISIONS_GATEWAY_SALT_KEY": "from-the-environment-123"}
    assert load_secret({"salt_key": "from-the-config-file-123"}, env) == b"from-the-config-file-123"
    assert load_secret({}, env) == b"from-the-environment-123"
    assert not (tmp_path / SALT_FILE).exists()


def test_short_salt_and_empty_salt_file_are_refused_without_showing_them(tmp_path: Path):
    with pytest.raises(SecretError) as short:
        load_secret({"salt_key": "tiny-secret"}, {})
    assert "tiny-secret" not in str(short.value)
    path = tmp_path / SALT_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    with pytest.raises(SecretError, match="empty or too short"):
        load_secret({}, {"DECISIONS_GATEWAY_DATA_DIR": str(tmp_path)})
    assert path.read_bytes() == b""  # never silently replaced: that would orphan every key


def test_a_salt_file_readable_by_others_is_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    path = tmp_path / SALT_FILE
    secret = read_or_create_salt(path)
    path.chmod(0o644)
    assert read_or_create_salt(path) == secret
    assert "chmod 600" in caplog.text and secret.decode() not in caplog.text


@pytest.mark.parametrize(("headers", "expected"), [
    ({"authorization": "Bearer sk-abc"}, "sk-abc"),
    ({"authorization": "bearer   sk-abc  "}, "sk-abc"),
    ({"authorization": "sk-abc"}, "sk-abc"),
    ({"x-api-key": "sk-x"}, "sk-x"),
    ({"api-key": "sk-y"}, "sk-y"),
    ({"authorization": "Bearer sk-a", "x-api-key": "sk-b"}, "sk-a"),
    ({"authorization": "  ", "x-api-key": "sk-b"}, "sk-b"),
    ({"authorization": "Bearer "}, None),
    ({}, None),
])
def test_key_from_headers(headers: dict[str, str], expected: str | None):
    assert key_from_headers(headers) == expected


def test_looks_like_key_refuses_spaces_controls_and_length():
    assert not looks_like_key("sk-a b")
    assert not looks_like_key("sk-\x00")
    assert not looks_like_key("sk-" + "a" * 300)
    assert not looks_like_key("")
    assert looks_like_key("' OR 1=1 --".replace(" ", ""))  # plausible: it is hashed, never put in SQL


def test_master_key_from_config_or_environment():
    assert master_key_of({"master_key": "sk-config"}, {"DECISIONS_GATEWAY_MASTER_KEY": "sk-env"}) == "sk-config"
    assert master_key_of({}, {"DECISIONS_GATEWAY_MASTER_KEY": "sk-env"}) == "sk-env"
    assert master_key_of({}, {}) is None

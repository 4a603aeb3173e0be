"""HTTP basic authentication for a service of a SASL-secured cluster, with the cluster's own
users: a user name and password are accepted when they log in to the cluster (SASL PLAIN, which
kctl's brokers check against the users' SCRAM credentials). The service keeps no password
list of its own; a success is remembered for a short while, keyed by a keyed hash of the
credentials (never the password itself), so a burst of requests logs in once."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

LOGIN_TIMEOUT_S = 5.0
REMEMBER_S = 60.0
MAX_REMEMBERED = 1024


def sasl_protocol(client_config: Mapping[str, str]) -> bool:
    """Whether the service's own settings log in with SASL (what --authenticate-users needs)."""
    return str(client_config.get("security.protocol", "")).upper().startswith("SASL")


class ClusterLogin:
    def __init__(self, client_config: Mapping[str, str | int | float | bool]) -> None:
        # the service's own connection settings without its credentials
        self._base = {k: v for k, v in client_config.items() if not k.startswith("sasl.")}
        self._key = secrets.token_bytes(32)
        self._remembered: dict[bytes, float] = {}
        self._lock = threading.Lock()

    def check(self, authorization: str | None) -> tuple[str, str] | None:
        """The user and password of an `Authorization: Basic ...` header that logs in, or None."""
        credentials = _basic(authorization)
        if credentials is None:
            return None
        user, password = credentials
        digest = hmac.new(self._key, f"{user}\0{password}".encode(), hashlib.sha256).digest()
        now = time.monotonic()
        with self._lock:
            if self._remembered.get(digest, 0.0) > now:
                return user, password
        if not self._logs_in(user, password):
            return None
        with self._lock:
            if len(self._remembered) >= MAX_REMEMBERED:
                self._remembered.clear()
            self._remembered[digest] = now + REMEMBER_S
        return user, password

    def _logs_in(self, user: str, password: str) -> bool:
        refused = threading.Event()

        def on_error(error: KafkaError) -> None:
            if error.code() == KafkaError._AUTHENTICATION:
                refused.set()

        config: dict[str, Any] = {
            **self._base,
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": password,
            "error_cb": on_error,
            "log_level": 0,
        }
        admin = AdminClient(config)
        deadline = time.monotonic() + LOGIN_TIMEOUT_S
        while time.monotonic() < deadline:
            admin.poll(0.05)  # serves error_cb: a refused login is known at once
            if refused.is_set():
                return False
            try:
                admin.list_topics(timeout=0.05)
                return True
            except KafkaException:
                continue
        return False


def _basic(authorization: str | None) -> tuple[str, str] | None:
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return (user, password) if sep and user else None

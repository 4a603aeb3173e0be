"""Who is on the other end of one connection: the principal of its listener's security
protocol, and the gate that keeps a SASL listener's requests out until the client logged in.

PLAINTEXT connections are User:ANONYMOUS; SSL ones are the subject of the client's
certificate (`User:CN=...`, Kafka's default principal builder) or ANONYMOUS without one;
SASL_PLAINTEXT and SASL_SSL ones must first pass SaslHandshake and SaslAuthenticate, and
until then may send only ApiVersions. With `connections.max.reauth.ms` a session expires
(KIP-368): the client re-authenticates on the same connection, as the same principal, or a
request after the expiry closes it.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable

from kafka.protocol.api_key import ApiKey

from brokerd.security.audit import SecurityAudit
from brokerd.security.listeners import Listener
from brokerd.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal, Session
from brokerd.security.sasl_server import (
    ILLEGAL_SASL_STATE,
    SASL_AUTHENTICATION_FAILED,
    AuthenticationFailed,
    SaslServer,
)

PRE_AUTHENTICATION_APIS = (ApiKey.ApiVersions, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate)


class ConnectionRefused(Exception):
    """The connection must be closed (a request before authentication, an expired session)."""


def certificate_principal(ssl_object: ssl.SSLObject | None) -> KafkaPrincipal:
    """The client certificate's subject as Kafka names it (RFC 2253 DN), else ANONYMOUS."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    from cryptography import x509  # only mTLS listeners need it: not on every broker's start-up

    return KafkaPrincipal(USER_TYPE, x509.load_der_x509_certificate(der).subject.rfc4514_string())


class ConnectionAuthenticator:
    """One connection's authentication state, consulted by the server for every request."""

    def __init__(
        self,
        listener: Listener,
        client_host: str,
        ssl_object: ssl.SSLObject | None,
        sasl: Callable[[], SaslServer],
        audit: SecurityAudit,
        reauth_ms: int,
    ):
        self.listener = listener
        self.session = Session(certificate_principal(ssl_object), client_host, listener.name)
        self._new_sasl = sasl
        self._sasl: SaslServer | None = None
        self._audit = audit
        self._reauth_ms = reauth_ms
        self.authenticated = not listener.uses_sasl
        self._expires_at: float | None = None

    def admit(self, api_key: int) -> None:
        """Raise ConnectionRefused when this request may not be served on this connection."""
        if api_key in PRE_AUTHENTICATION_APIS:
            return
        if not self.authenticated:
            raise ConnectionRefused(
                f"Unexpected Kafka request of type {ApiKey(api_key).name} during SASL handshake"
            )
        if self._expires_at is not None and time.monotonic() > self._expires_at:
            raise ConnectionRefused(
                f"session of {self.session.principal} expired "
                "(connections.max.reauth.ms) without re-authentication"
            )

    def handshake(self, mechanism: str) -> tuple[dict, bool]:
        """SaslHandshake: pick the mechanism (again, when re-authenticating); the response and
        whether to close the connection after it (an unsupported mechanism, as in Kafka)."""
        if not self.listener.uses_sasl:
            return {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []}, False
        self._sasl = self._new_sasl()
        error = self._sasl.handshake(mechanism)
        return {"error_code": error, "mechanisms": self._sasl.enabled_mechanisms}, error != 0

    async def authenticate(self, auth_bytes: bytes) -> tuple[dict, bool]:
        """SaslAuthenticate: the response and whether to close the connection after it."""
        if self._sasl is None or self._sasl.mechanism is None:
            return self._failure(None, "Unexpected SaslAuthenticate request before SaslHandshake")
        try:
            exchange = await self._sasl.authenticate(auth_bytes)
        except AuthenticationFailed as exc:
            return self._failure(self._sasl.user, str(exc))
        response = {
            "error_code": 0,
            "error_message": None,
            "auth_bytes": exchange.auth_bytes,
            "session_lifetime_ms": 0,
        }
        if exchange.principal is not None:
            if (
                self.authenticated
                and self._expires_at is not None
                and exchange.principal != self.session.principal
            ):
                return self._failure(
                    self._sasl.user,
                    "Cannot change principals during "
                    f"re-authentication from {self.session.principal}: "
                    f"{exchange.principal}",
                )
            self.session = Session(exchange.principal, self.session.client_host, self.listener.name)
            self.authenticated = True
            if self._reauth_ms > 0:
                self._expires_at = time.monotonic() + self._reauth_ms / 1000
                response["session_lifetime_ms"] = self._reauth_ms
        return response, False

    def _failure(self, user: str | None, message: str) -> tuple[dict, bool]:
        self._audit.authentication_failed(
            user, self.session.client_host, self._sasl.mechanism if self._sasl else None, message
        )
        return (
            {
                "error_code": SASL_AUTHENTICATION_FAILED,
                "error_message": message,
                "auth_bytes": b"",
                "session_lifetime_ms": 0,
            },
            True,
        )

"""The server side of SASL on one connection (KIP-43, KIP-152, KIP-368): SaslHandshake picks a
mechanism, SaslAuthenticate carries its messages until the client is authenticated or refused.

PLAIN (RFC 4616) checks the password against the SCRAM credentials; SCRAM-SHA-256/512
(RFC 5802) run through `scramp`, as Kafka's ScramSaslServer behaves, with one leniency Kafka
also has: librdkafka before 2.6.1 repeats the client nonce in front of the full nonce in its
client-final message, which is accepted when it ends with the expected nonce.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from brokerd.security.principal import USER_TYPE, KafkaPrincipal
from brokerd.security.scram_credentials import MECHANISMS as SCRAM_MECHANISMS
from brokerd.security.scram_credentials import ScramCredentialStore

if TYPE_CHECKING:  # scramp is imported by the first SCRAM exchange, not on start-up
    import scramp

log = logging.getLogger(__name__)

PLAIN = "PLAIN"
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58


class AuthenticationFailed(Exception):
    """The client is refused: its connection is answered SASL_AUTHENTICATION_FAILED, then closed."""


@dataclass
class SaslExchange:
    """One SaslAuthenticate round's outcome: bytes for the client, and the principal once done."""

    auth_bytes: bytes
    principal: KafkaPrincipal | None = None


class SaslServer:
    """One connection's SASL state: the mechanism chosen by the handshake, then its exchange."""

    def __init__(self, enabled_mechanisms: list[str], credentials: ScramCredentialStore):
        self.enabled_mechanisms = enabled_mechanisms
        self._credentials = credentials
        self.mechanism: str | None = None
        self._scram: scramp.core.ScramServer | None = None
        self._user: str | None = None

    def handshake(self, mechanism: str) -> int:
        """SaslHandshake: the error code to answer (0, or UNSUPPORTED_SASL_MECHANISM)."""
        if mechanism not in self.enabled_mechanisms:
            return UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        self._scram = None
        return 0

    async def authenticate(self, auth_bytes: bytes) -> SaslExchange:
        """SaslAuthenticate: one message of the chosen mechanism."""
        mechanism = self.mechanism
        if mechanism == PLAIN:
            return await self._plain(auth_bytes)
        if mechanism in SCRAM_MECHANISMS:
            return self._scram_step(mechanism, auth_bytes)
        raise AuthenticationFailed("Unexpected SaslAuthenticate request before SaslHandshake")

    async def _plain(self, auth_bytes: bytes) -> SaslExchange:
        parts = auth_bytes.split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        self._user = user
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        if not user or not await self._credentials.check_password(user, password):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        return SaslExchange(b"", KafkaPrincipal(USER_TYPE, user))

    def _scram_step(self, mechanism: str, auth_bytes: bytes) -> SaslExchange:
        import scramp

        message = auth_bytes.decode("utf-8", "replace")
        try:
            scram = self._scram
            if scram is None:
                scram = self._scram = scramp.ScramMechanism(mechanism).make_server(
                    lambda user: self._lookup(mechanism, user)
                )
                scram.set_client_first(message)
                return SaslExchange(scram.get_server_first().encode())
            self._accept_repeated_client_nonce(scram, message)
            scram.set_client_final(message)
            return SaslExchange(
                scram.get_server_final().encode(), KafkaPrincipal(USER_TYPE, self._scram_user())
            )
        except scramp.ScramException:
            raise AuthenticationFailed(
                "Authentication failed during authentication due to "
                f"invalid credentials with SASL mechanism {mechanism}"
            ) from None

    def _scram_user(self) -> str:
        """The user of the SCRAM exchange, whose credential the client-first message looked up."""
        if self._user is None:
            raise RuntimeError("SCRAM client-final message before the client-first one's user lookup")
        return self._user

    def _lookup(self, mechanism: str, user: str) -> tuple[bytes, bytes, bytes, int]:
        """scramp's auth_fn: the stored credential of a user, or a refusal."""
        import scramp

        self._user = user
        credential = self._credentials.lookup(user, mechanism)
        if credential is None:
            raise scramp.ScramException(f"unknown user {user!r}")
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def _accept_repeated_client_nonce(self, scram: scramp.core.ScramServer, client_final: str) -> None:
        """librdkafka before 2.6.1 sends `r=<client nonce><client nonce + server nonce>`;
        Kafka 3.8.1+ accepts a nonce that ends with the expected one (its signature covers
        the message as sent), and so does brokerd."""
        sent = next((a[2:] for a in client_final.split(",") if a.startswith("r=")), None)
        expected = str(scram.nonce)
        if sent is not None and sent != expected and sent.endswith(expected):
            scram.nonce = type(scram.nonce)(sent)

    @property
    def user(self) -> str | None:
        """The user name the client claimed, for the log line of a failure."""
        return self._user

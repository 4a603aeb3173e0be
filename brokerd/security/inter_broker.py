"""How a broker connects to another (replica fetchers, transaction markers): over the
inter-broker listener, with TLS and a SASL login where that listener's protocol has them.

Brokers authenticate as the cluster's super user, with the client settings of
`<cluster>/admin.properties` (read at each new connection, so a changed password is taken up),
as Kafka brokers use the credentials of their own JAAS configuration. When the other broker
limits the session (`connections.max.reauth.ms`, KIP-368), the connection logs in again before
the session ends, as Kafka's clients do, instead of being closed by it.
"""

from __future__ import annotations

import random
import ssl
from dataclasses import dataclass
from pathlib import Path

from brokerd.security import client_properties
from brokerd.security.listeners import client_context
from brokerd.security.sasl_server import PLAIN

# Kafka's clients re-authenticate at a random point between 85% and 95% of the session
# lifetime (SaslClientAuthenticator): the margin covers latency and clock drift, the jitter
# keeps many connections from logging in at once.
REAUTH_WINDOW = (0.85, 0.95)


def reauthentication_time(session_lifetime_ms: int, authenticated_at: float) -> float | None:
    """When (on the clock of ``authenticated_at``) to log in again on a connection whose
    SaslAuthenticate answered ``session_lifetime_ms``; None when the session has no limit."""
    if session_lifetime_ms <= 0:
        return None
    return authenticated_at + session_lifetime_ms / 1000 * random.uniform(*REAUTH_WINDOW)


class InterBrokerAuthenticationError(Exception):
    """The other broker refused this broker's login, or its settings are missing."""


@dataclass(frozen=True)
class InterBrokerSecurity:
    listener_name: str
    security_protocol: str
    mechanism: str
    cluster_dir: Path

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.security_protocol not in ("SSL", "SASL_SSL"):
            return None
        settings = self._settings()
        return client_context(
            settings.get("ssl.ca.location"),
            settings.get("ssl.certificate.location"),
            settings.get("ssl.key.location"),
        )

    def sasl_login(self) -> SaslLogin:
        settings = self._settings()
        user, password = settings.get("sasl.username"), settings.get("sasl.password")
        if not user or password is None:
            raise InterBrokerAuthenticationError(
                f"{client_properties.path(self.cluster_dir)} names no sasl.username and "
                "sasl.password for brokers to authenticate to each other"
            )
        return SaslLogin(self.mechanism, user, password)

    def _settings(self) -> dict[str, str]:
        return client_properties.read(client_properties.path(self.cluster_dir))


class SaslLogin:
    """The client side of one SASL login: the messages to send, given the server's replies."""

    def __init__(self, mechanism: str, user: str, password: str):
        import scramp  # a SASL cluster's brokers only: not on every broker's start-up

        self.mechanism = mechanism
        self._plain = f"\0{user}\0{password}".encode() if mechanism == PLAIN else None
        self._scram = None if mechanism == PLAIN else scramp.ScramClient([mechanism], user, password)
        self._step = 0

    def next_message(self, server_reply: bytes | None) -> bytes | None:
        """The next message to send (None when the exchange is complete)."""
        import scramp

        self._step += 1
        scram = self._scram
        if scram is None:  # PLAIN
            return self._plain if self._step == 1 else None
        try:
            if self._step == 1:
                return scram.get_client_first().encode()
            if server_reply is None:
                raise InterBrokerAuthenticationError(
                    f"SCRAM login step {self._step} needs the server's reply"
                )
            if self._step == 2:
                scram.set_server_first(server_reply.decode())
                return scram.get_client_final().encode()
            scram.set_server_final(server_reply.decode())
        except scramp.ScramException as exc:
            raise InterBrokerAuthenticationError(f"SCRAM login failed: {exc}") from None
        return None

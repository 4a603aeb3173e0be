"""Listeners (Kafka's `listeners` and `listener.security.protocol.map`) and their TLS contexts.

A listener is a name, an address and a security protocol: PLAINTEXT, SSL (TLS; a client
certificate, when asked for and given, names the principal), SASL_PLAINTEXT or SASL_SSL
(a SASL login on every connection). TLS keys and certificates are PEM files, Kafka's
`ssl.keystore.type=PEM` and `ssl.truststore.type=PEM`.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int
    security_protocol: str

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "host": self.host,
            "port": self.port,
            "security_protocol": self.security_protocol,
        }


def parse_protocol_map(text: str) -> dict[str, str]:
    """`NAME:PROTOCOL,...` -> {NAME: PROTOCOL}, refusing unknown protocols."""
    mapping = {}
    for item in filter(None, (i.strip() for i in text.split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or protocol.upper() not in PROTOCOLS:
            raise ValueError(
                f"invalid listener.security.protocol.map entry {item!r}: "
                f"expected NAME:PROTOCOL with PROTOCOL one of {', '.join(PROTOCOLS)}"
            )
        mapping[name.upper()] = protocol.upper()
    return mapping


def parse_listeners(text: str, protocol_map: dict[str, str]) -> list[Listener]:
    """`NAME://HOST:PORT,...` as Kafka's `listeners`; names must be unique and mapped."""
    listeners: list[Listener] = []
    for item in filter(None, (i.strip() for i in text.split(","))):
        name, sep, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit() or not 0 <= int(port) < 65536:
            raise ValueError(f"invalid listener {item!r}: expected NAME://HOST:PORT")
        name = name.upper()
        if name not in protocol_map:
            raise ValueError(f"No security protocol defined for listener {name}")
        if any(existing.name == name for existing in listeners):
            raise ValueError(f"Each listener must have a different name, {name} appears twice")
        listeners.append(Listener(name, host.strip("[]") or "0.0.0.0", int(port), protocol_map[name]))
    if not listeners:
        raise ValueError("listeners must name at least one listener")
    return listeners


def server_context(
    keystore: str, key_password: str | None, truststore: str | None, client_auth: str
) -> ssl.SSLContext:
    """The TLS context of an SSL or SASL_SSL listener; a missing or unreadable file is a
    start-up error that names the setting."""
    if not keystore:
        raise ValueError("ssl.keystore.location must be set for an SSL or SASL_SSL listener")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(keystore, password=key_password or None)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"cannot load ssl.keystore.location {keystore}: {exc}") from None
    context.verify_mode = CLIENT_AUTH[client_auth]
    if truststore:
        try:
            context.load_verify_locations(truststore)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cannot load ssl.truststore.location {truststore}: {exc}") from None
    elif client_auth != "none":
        raise ValueError(f"ssl.client.auth={client_auth} needs ssl.truststore.location")
    return context


def client_context(ca_location: str | None, certificate: str | None, key: str | None) -> ssl.SSLContext:
    """The TLS context brokerd uses towards another broker (librdkafka's ssl.* names)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_location or None)
    if certificate:
        context.load_cert_chain(certificate, key or None)
    return context

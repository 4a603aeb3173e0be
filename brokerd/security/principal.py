"""Who a request comes from: Kafka's KafkaPrincipal and the session it travels in."""

from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True)
class KafkaPrincipal:
    """`User:alice`, `User:CN=broker,O=kctl` (a TLS client certificate's subject) or
    `User:ANONYMOUS` (an unauthenticated listener)."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """`Type:name`, as ACL bindings and `super.users` write it."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"invalid principal {text!r}: expected Type:name, e.g. User:alice")
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


@dataclass(frozen=True)
class Session:
    """The authenticated principal of one connection and the host it connects from."""

    principal: KafkaPrincipal
    client_host: str
    listener: str = "PLAINTEXT"

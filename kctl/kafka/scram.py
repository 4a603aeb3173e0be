"""SCRAM users, managed over the wire as Kafka's kafka-configs.sh does (KIP-554).

AlterUserScramCredentials and DescribeUserScramCredentials through confluent-kafka's admin
client, so `kctl user` works against any Kafka cluster and never touches a broker's files.
The client salts and hashes the password itself (librdkafka sends the salted password, the
broker derives the stored and server keys): no broker ever receives or keeps the password.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, cast

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from kctl.kafka.client import Connection, result
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

DEFAULT_ITERATIONS = 4096  # Kafka's minimum; its maximum is 16384


def _mechanism(name: str) -> ScramMechanism:
    return ScramMechanism[name.replace("-", "_")]


def _name(mechanism: ScramMechanism) -> str:
    return mechanism.name.replace("_", "-")


def upsert(conn: Connection, user: str, password: str, mechanism: str, iterations: int) -> None:
    """Create or replace the user's credential for one mechanism."""
    info = ScramCredentialInfo(_mechanism(mechanism), iterations)
    _alter(conn, [UserScramCredentialUpsertion(user, info, password.encode())], f"create user {user!r}")


def describe(conn: Connection, users: list[str] | None = None) -> list[dict]:
    """Users with their mechanisms and iterations, sorted by name: every user, or `users`
    (an unknown one is exit 4, RESOURCE_NOT_FOUND)."""
    admin = conn.admin()
    # A future per user when users are named, else one future of them all: confluent-kafka
    # annotates each answer as either.
    if users:
        futures = admin.describe_user_scram_credentials(users, request_timeout=conn.timeout)
        found = {
            u: result(f, f"describe user {u!r}") for u, f in cast(dict[str, Future[Any]], futures).items()
        }
    else:
        future = admin.describe_user_scram_credentials(request_timeout=conn.timeout)
        found = result(cast(Future[Any], future), "list users")
    return [
        {
            "user": user,
            "credentials": [
                {"mechanism": _name(c.mechanism), "iterations": c.iterations}
                for c in sorted(found[user].scram_credential_infos, key=lambda c: c.mechanism.value)
            ],
        }
        for user in sorted(found)
    ]


def delete(conn: Connection, user: str, mechanisms: list[str] | None) -> list[str]:
    """Delete the user's credentials for `mechanisms` (default: every one it has); returns
    the mechanisms deleted."""
    if not mechanisms:
        mechanisms = [c["mechanism"] for c in describe(conn, [user])[0]["credentials"]]
    _alter(
        conn, [UserScramCredentialDeletion(user, _mechanism(m)) for m in mechanisms], f"delete user {user!r}"
    )
    return mechanisms


def _alter(conn: Connection, alterations: list, doing: str) -> None:
    admin = conn.admin()  # referenced until the futures are done: a destroyed client fails them
    try:
        futures = admin.alter_user_scram_credentials(alterations, request_timeout=conn.timeout)
    except (KafkaException, ValueError, TypeError) as exc:
        raise KctlError(f"cannot {doing}: {exc}", ExitCode.INVALID_INPUT) from None
    for future in futures.values():
        result(future, doing)

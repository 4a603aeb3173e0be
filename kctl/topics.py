"""Topic administration shared by `kctl topic` and `kctl bench`."""

from __future__ import annotations

import re

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from kctl.kafka.client import Connection, fetch_metadata
from kctl.kafka.errors import from_kafka
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def validate_name(name: str) -> str:
    """Kafka's own rule, checked before any request so the error says what is wrong."""
    if not _LEGAL_NAME.fullmatch(name) or name in (".", ".."):
        raise KctlError(f"invalid topic name {name!r}: use 1-249 of a-z A-Z 0-9 . _ -",
                        ExitCode.INVALID_INPUT)
    return name


def create(conn: Connection, name: str, partitions: int, replicas: int,
           configs: dict[str, str], if_not_exists: bool = False) -> bool:
    """Create a topic; returns False when it already existed and `if_not_exists` allows that."""
    validate_name(name)
    admin = conn.admin()
    fetch_metadata(admin, conn)
    request = NewTopic(name, num_partitions=partitions, replication_factor=replicas, config=configs)
    future = admin.create_topics([request], request_timeout=conn.timeout,
                                 operation_timeout=conn.timeout)[name]
    try:
        future.result()
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise from_kafka(exc, f"create topic {name!r}") from None
        if not if_not_exists:
            raise KctlError(f"topic {name!r} already exists (--if-not-exists ignores this)") from None
        return False
    return True


def ensure(conn: Connection, name: str, partitions: int, replicas: int) -> bool:
    """Create the topic unless the cluster already has it; True when it was created."""
    if name in fetch_metadata(conn.admin(), conn).topics:
        return False
    return create(conn, name, partitions, replicas, {}, if_not_exists=True)

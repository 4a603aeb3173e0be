"""Share groups (KIP-932) from kctl's side: confluent-kafka's ShareConsumer in explicit
acknowledgement mode, so `kctl consume --share-group` decides how each record it printed is
acknowledged (accept, release for another delivery, or reject), and commits those
acknowledgements before it reads on."""

from __future__ import annotations

from enum import Enum

from confluent_kafka import AcknowledgeType, KafkaException, Message, ShareConsumer

from kctl.kafka.client import Connection
from kctl.kafka.errors import exit_code_for
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

__all__ = ["Ack", "Message", "ShareConsumer", "acknowledge", "commit", "poll", "share_consumer"]


class Ack(str, Enum):
    ACCEPT = "accept"  # done with: never delivered again
    RELEASE = "release"  # delivered again (to any member), its delivery count raised
    REJECT = "reject"  # never delivered again, not processed either

    @property
    def kind(self) -> AcknowledgeType:
        return {Ack.ACCEPT: AcknowledgeType.ACCEPT, Ack.RELEASE: AcknowledgeType.RELEASE}.get(
            self, AcknowledgeType.REJECT
        )


def share_consumer(conn: Connection, group: str, topic: str) -> ShareConsumer:
    """A member of share group ``group`` reading ``topic``."""
    try:
        consumer = ShareConsumer(conn.config({"group.id": group, "share.acknowledgement.mode": "explicit"}))
    except (KafkaException, ValueError, TypeError) as exc:
        reason = exc.args[0].str() if isinstance(exc, KafkaException) else str(exc)
        raise KctlError(f"invalid client setting: {reason}", ExitCode.INVALID_INPUT) from None
    consumer.subscribe([topic])
    return consumer


def poll(consumer: ShareConsumer, timeout_s: float) -> list[Message]:
    """The records of one poll; a record delivered with an error ends the command."""
    try:
        messages = list(consumer.poll(timeout_s))
    except KafkaException as exc:
        error = exc.args[0]
        raise KctlError(f"cannot consume: {error.str()}", exit_code_for(error)) from None
    for message in messages:
        error = message.error()
        if error is not None:
            where = message.topic() or "the share group"
            raise KctlError(f"cannot consume {where}: {error.str()}", exit_code_for(error))
    return messages


def acknowledge(consumer: ShareConsumer, messages: list[Message], ack: Ack) -> None:
    for message in messages:
        consumer.acknowledge(message, ack.kind)


def commit(consumer: ShareConsumer, timeout_s: float) -> list[str]:
    """Send the acknowledgements and wait for the brokers; returns why any failed (those
    records are delivered again once their locks expire)."""
    try:
        results = consumer.commit_sync(timeout_s)
    except KafkaException as exc:
        return [exc.args[0].str()]
    return [f"{tp.topic}/{tp.partition}: {error}" for tp, error in results.items() if error is not None]

"""Whether the cluster can take acks=all records: each partition's ISR against its topic's
min.insync.replicas.

A leader refuses acks=all writes with NOT_ENOUGH_REPLICAS while its ISR is smaller than
min.insync.replicas. librdkafka treats that as retriable and retries until the message
times out, so the error itself never reaches the application: `kctl produce` asks here
before it sends, and again when a record times out, to say why in one line.
"""

from __future__ import annotations

from collections.abc import Iterable

from kctl.kafka import configs
from kctl.kafka.client import Connection, TopicMetadata
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

SETTING = "min.insync.replicas"


def refusal(
    conn: Connection, meta: TopicMetadata, partitions: Iterable[int] | None = None
) -> KctlError | None:
    """NOT_ENOUGH_REPLICAS (exit 6) if one of `partitions` (default: all) of a topic has fewer
    in-sync replicas than min.insync.replicas; None if all have enough, or if the setting
    cannot be read (e.g. not authorized), in which case the broker still decides.

    The setting is only asked for when a partition is under-replicated, so a healthy topic
    costs no request (a min.insync.replicas above the replication factor, which refuses
    every acks=all record, is left to the broker)."""
    under = {
        p: len(meta.partitions[p].isrs)
        for p in sorted(partitions or meta.partitions)
        if p in meta.partitions and len(meta.partitions[p].isrs) < len(meta.partitions[p].replicas)
    }
    topic = meta.topic
    assert topic is not None  # a topic's metadata names it
    required = _min_insync(conn, topic) if under else None
    if required is None:
        return None
    short = [(p, n) for p, n in under.items() if n < required]
    if not short:
        return None
    (partition, isr), more = short[0], len(short) - 1
    also = f" (and {more} more partition{'s' if more > 1 else ''})" if more else ""
    return KctlError(
        f"NOT_ENOUGH_REPLICAS: ISR {isr} < {SETTING} {required} for "
        f"{meta.topic}/{partition}{also}; acks=all refused",
        ExitCode.CONFLICT,
    )


def _min_insync(conn: Connection, topic: str) -> int | None:
    try:
        return int(configs.topic_configs(conn, topic)[SETTING]["value"])
    except (KctlError, KeyError, TypeError, ValueError):
        return None

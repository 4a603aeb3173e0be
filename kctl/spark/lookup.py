"""What the driver asks the cluster: the partitions of a subscription and their offsets.

One AdminClient answers everything with batched ListOffsets requests (one round for all
partitions), at the isolation level of the query, as Spark's admin-based offset reader does:
with read_committed the end of a partition is its last stable offset, not its high watermark.
Runs only on the driver; executors read records and never need this.
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as KafkaPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from kctl.spark.offsets import Offsets, TopicPartition
from kctl.spark.options import Subscription

TIMEOUT_S = 30.0
_CONSUMER_ONLY = ("group.id", "isolation.level")


class ClusterOffsets:
    def __init__(self, client: dict[str, str], read_committed: bool = False, timeout_s: float = TIMEOUT_S):
        conf: dict[str, str | int | float | bool] = {
            k: v for k, v in client.items() if k not in _CONSUMER_ONLY
        }
        self._admin = AdminClient(conf)
        self._isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        self._timeout = timeout_s

    def partitions(self, subscription: Subscription) -> list[TopicPartition]:
        """The partitions the subscription covers now (assign: exactly those given)."""
        if subscription.assigned:
            return list(subscription.assigned)
        try:
            topics = self._admin.list_topics(timeout=self._timeout).topics
        except KafkaException as exc:
            raise ConnectionError(f"cannot fetch metadata: {exc.args[0].str()}") from None
        return sorted(
            TopicPartition(name, p)
            for name, meta in topics.items()
            if subscription.wants(name)
            for p in meta.partitions
        )

    def earliest(self, tps: Iterable[TopicPartition]) -> Offsets:
        return self._list({tp: OffsetSpec.earliest() for tp in tps})

    def latest(self, tps: Iterable[TopicPartition]) -> Offsets:
        return self._list({tp: OffsetSpec.latest() for tp in tps})

    def at_times(self, times: dict[TopicPartition, int]) -> Offsets:
        """First offset whose timestamp is >= the time given; -1 where no record is that late."""
        return self._list({tp: OffsetSpec.for_timestamp(ts) for tp, ts in times.items()})

    def _list(self, specs: dict[TopicPartition, OffsetSpec]) -> Offsets:
        if not specs:
            return {}
        request = {KafkaPartition(tp.topic, tp.partition): spec for tp, spec in specs.items()}
        futures = self._admin.list_offsets(
            request, isolation_level=self._isolation, request_timeout=self._timeout
        )
        found = {}
        for kp, future in futures.items():
            try:
                found[TopicPartition(kp.topic, kp.partition)] = future.result().offset
            except KafkaException as exc:
                raise ConnectionError(
                    f"cannot list offsets of {kp.topic}/{kp.partition}: {exc.args[0].str()}"
                ) from None
        return found

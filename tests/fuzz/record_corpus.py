"""Record the request frames real clients send, as the fuzzer's seed corpus.

Run once (``python -m tests.fuzz.record_corpus``): a broker in this process records every
frame it is sent while kafka-python and confluent-kafka do what applications do (admin
operations, plain, compressed, idempotent and transactional produce, group consumption with
both group protocols, a share group; client quotas as kctl sends them through kafka-python).
Each distinct frame (a few per API and version, correlation id aside) is written to
tests/fuzz/corpus as ``<client>-<api>-v<version>-<n>.bin``, without its size prefix. The
files are committed; re-recording is only needed for new APIs or clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from kafka.protocol.api_key import ApiKey

from brokerd.broker import Broker
from brokerd.config import BrokerConfig
from brokerd.state import ClusterState
from tests.cluster_harness import free_port
from tests.fuzz import CORPUS
from tests.fuzz.broker import OVERRIDES

PER_API_VERSION = 4  # distinct frames kept of each API and version, per client


class _RecordingBroker:
    """A broker on its own thread whose server keeps a copy of every frame it answers."""

    def __init__(self, cluster_dir: Path) -> None:
        self.port = free_port()
        ClusterState(cluster_dir).initialize({1: self.port})
        self.config = BrokerConfig(1, cluster_dir, self.port, overrides=dict(OVERRIDES))
        self.frames: list[bytes] = []
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._run(),), daemon=True)

    async def _run(self) -> None:
        broker = Broker(self.config)
        server = broker.servers[0]
        respond = server.respond

        async def recording(payload, auth):
            self.frames.append(bytes(payload))
            return await respond(payload, auth)

        server.respond = recording  # type: ignore[method-assign]
        await broker.start()
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        self._ready.set()
        await self._stopping.wait()
        await broker.stop()

    @contextlib.contextmanager
    def running(self) -> Iterator[str]:
        self._thread.start()
        self._ready.wait(30)
        try:
            yield f"127.0.0.1:{self.port}"
        finally:
            assert self._loop is not None and self._stopping is not None
            self._loop.call_soon_threadsafe(self._stopping.set)
            self._thread.join(60)


def _attempt(step: Callable[[], object]) -> None:
    """Run one client operation; a refusal by the broker is as good a frame as a success."""
    try:
        step()
    except Exception as exc:  # the frames were sent either way
        print(f"  ({step.__name__ if hasattr(step, '__name__') else step}: {exc!r:.120})")


def _kafka_python(bootstrap: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ConfigResource,
        ConfigResourceType,
        NewPartitions,
        NewTopic,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
    from kafka.structs import TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    topic = ConfigResource(ConfigResourceType.TOPIC, "kp-topic")
    pattern = ResourcePattern(ResourceType.TOPIC, "kp-topic")
    acl = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
    acl_filter = ACLFilter(
        "User:alice",
        "*",
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(ResourceType.TOPIC, "kp-topic", pattern.pattern_type),
    )
    for step in (
        lambda: admin.create_topics(
            [
                NewTopic("kp-topic", 3, 1, topic_configs={"cleanup.policy": "compact"}),
                NewTopic("kp-assigned", -1, -1, replica_assignments={0: [1], 1: [1]}),
            ]
        ),
        lambda: admin.create_topics([NewTopic("kp-checked", 2, 1)], validate_only=True),
        lambda: admin.create_partitions({"kp-topic": NewPartitions(4)}),
        lambda: admin.create_partitions({"kp-assigned": NewPartitions(3, [[1]])}, validate_only=True),
        lambda: admin.describe_configs([topic, ConfigResource(ConfigResourceType.BROKER, "1")]),
        lambda: admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "kp-topic", {"retention.ms": "600000"})]
        ),
        lambda: admin.create_acls([acl]),
        lambda: admin.describe_acls(acl_filter),
        lambda: admin.delete_acls([acl_filter]),
        lambda: admin.describe_cluster(),
        lambda: admin.describe_log_dirs(),
        lambda: admin.list_partition_reassignments(),
        lambda: admin.alter_partition_reassignments({TopicPartition("kp-topic", 0): [1]}),
        lambda: admin.describe_producers([TopicPartition("kp-topic", 0)]),
        lambda: admin.list_transactions(),
        lambda: admin.describe_user_scram_credentials(),
    ):
        _attempt(step)
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip", linger_ms=5)
    for i in range(20):
        producer.send("kp-topic", key=b"k%d" % (i % 3), value=b"value %d" % i, headers=[("h", b"1")])
    producer.flush()
    producer.close()
    txn = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-txn")
    _attempt(txn.init_transactions)
    _attempt(txn.begin_transaction)
    txn.send("kp-topic", key=b"k", value=b"in a transaction")
    _attempt(txn.commit_transaction)
    txn.close()
    consumer = KafkaConsumer(
        "kp-topic",
        bootstrap_servers=bootstrap,
        group_id="kp-group",
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
    )
    for _ in consumer:
        pass
    consumer.commit()
    consumer.close()
    for quota_request in (
        AlterClientQuotasRequest(entries=[([("user", "alice")], [("producer_byte_rate", 1e6, False)])]),
        DescribeClientQuotasRequest(components=[("user", 0, "alice")], strict=False),
    ):  # as kctl sends them (kctl.kafka.quotas): kafka-python has no admin method for quotas
        _attempt(lambda r=quota_request: admin._manager.run(lambda a: a._manager.send(r), admin))
    for step in (
        lambda: admin.list_groups(),
        lambda: admin.describe_groups(["kp-group"]),
        lambda: admin.list_group_offsets("kp-group"),
        lambda: admin.delete_records({TopicPartition("kp-topic", 0): 1}),
        lambda: admin.delete_groups(["kp-group"]),
        lambda: admin.delete_topics(["kp-assigned"]),
    ):
        _attempt(step)
    admin.close()


def _confluent_kafka(bootstrap: str) -> None:
    from confluent_kafka import (
        AcknowledgeType,
        Consumer,
        ConsumerGroupTopicPartitions,
        ElectionType,
        Producer,
        ShareConsumer,
        TopicCollection,
        TopicPartition,
    )
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    SET = AlterConfigOpType.SET

    def wait(futures) -> None:
        for future in futures.values() if isinstance(futures, dict) else [futures]:
            _attempt(lambda f=future: f.result(10))

    for step in (
        lambda: admin.create_topics([NewTopic("ck-topic", 2, 1, config={"compression.type": "zstd"})]),
        lambda: admin.create_partitions([NewPartitions("ck-topic", 3)]),
        lambda: admin.describe_configs([ConfigResource("topic", "ck-topic")]),
        lambda: admin.incremental_alter_configs(
            [
                ConfigResource(
                    "topic",
                    "ck-topic",
                    incremental_configs=[ConfigEntry("retention.ms", "600000", incremental_operation=SET)],
                )
            ]
        ),
        lambda: admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"pw"
                )
            ]
        ),
        lambda: admin.describe_user_scram_credentials(["bob"]),
        lambda: admin.describe_cluster(),
        lambda: admin.describe_topics(TopicCollection(["ck-topic"])),
        lambda: admin.list_offsets({TopicPartition("ck-topic", 0): OffsetSpec.latest()}),
        lambda: admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("ck-topic", 0)]),
    ):
        _attempt(lambda step=step: wait(step()))
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": "lz4"}
    )
    for i in range(20):
        producer.produce("ck-topic", value=b"value %d" % i, key=b"k%d" % (i % 4), headers={"h": b"1"})
    producer.flush(10)
    for protocol in ("classic", "consumer"):
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"ck-{protocol}",
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["ck-topic"])
        for _ in range(10):
            consumer.poll(0.5)
        _attempt(lambda c=consumer: c.commit(asynchronous=False))
        consumer.close()
    share = ShareConsumer(
        {"bootstrap.servers": bootstrap, "group.id": "ck-share", "share.acknowledgement.mode": "explicit"}
    )
    share.subscribe(["ck-topic"])
    for _ in range(10):
        for message in share.poll(0.5) or []:
            share.acknowledge(
                message, AcknowledgeType.ACCEPT if message.offset() % 2 else AcknowledgeType.RELEASE
            )
    _attempt(lambda: share.commit_sync())
    share.close()
    for step in (
        lambda: admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("ck-classic")]),
        lambda: admin.describe_consumer_groups(["ck-classic", "ck-consumer"]),
        lambda: admin.delete_records([TopicPartition("ck-topic", 0, 1)]),
        lambda: admin.delete_consumer_groups(["ck-classic"]),
        lambda: admin.delete_topics(["ck-topic"]),
    ):
        _attempt(lambda step=step: wait(step()))


def _keep(frames: list[bytes]) -> dict[str, bytes]:
    """A few distinct frames of each API and version (correlation id aside), named for them."""
    kept: dict[str, bytes] = {}
    seen: set[bytes] = set()
    counts: dict[tuple[int, int], int] = {}
    for frame in frames:
        api_key, version = int.from_bytes(frame[0:2], "big", signed=True), int.from_bytes(frame[2:4], "big")
        shape = frame[:4] + frame[8:]
        n = counts.get((api_key, version), 0)
        if shape in seen or n >= PER_API_VERSION:
            continue
        seen.add(shape)
        counts[(api_key, version)] = n + 1
        kept[f"{ApiKey(api_key).name}-v{version}-{n}"] = frame
    return kept


def main() -> None:
    CORPUS.mkdir(exist_ok=True)
    for client, drive in (("kafka-python", _kafka_python), ("confluent-kafka", _confluent_kafka)):
        with tempfile.TemporaryDirectory() as cluster_dir:
            recorder = _RecordingBroker(Path(cluster_dir))
            with recorder.running() as bootstrap:
                print(f"recording {client}")
                drive(bootstrap)
            for name, frame in _keep(recorder.frames).items():
                (CORPUS / f"{client}-{name}.bin").write_bytes(frame)


if __name__ == "__main__":
    main()

"""KIP-848 consumer groups (group.protocol=consumer) on real brokers with confluent-kafka
consumers: the broker assigns, members split a topic, a member that leaves or dies has its
partitions moved, AdminClient sees a CONSUMER group, and a coordinator failover keeps the
group and its committed offsets."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from tests.cluster_harness import running_cluster, wait_until
from tests.kafka_helpers import create_topic

pytestmark = pytest.mark.cluster

PARTITIONS = 6
# Heartbeats every second instead of Kafka's 5, and sessions that may be as short as 6 s, so
# the tests see rebalances and fencing quickly; consumers set neither (the protocol refuses).
FAST_GROUPS = {
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.session.timeout.ms": "6000",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("kip848"), brokers=1, overrides=FAST_GROUPS) as c:
        yield c


def produce(bootstrap: str, topic: str, count: int, prefix: bytes = b"") -> None:
    """``count`` distinct values (``prefix`` keeps later batches distinct) over the partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, prefix + b"%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0


class Member:
    """A consumer with group.protocol=consumer that remembers what it read and owns."""

    def __init__(self, bootstrap: str, group: str, topic: str, **conf: object) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **conf,
            }
        )
        self.consumer.subscribe([topic])
        self.values: list[bytes] = []

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def poll(self) -> None:
        msgs = self.consumer.consume(200, 0.05)
        good = [m for m in msgs if m.error() is None]
        self.values += [m.value() for m in good]
        if good:
            try:
                self.consumer.commit(asynchronous=False)
            except KafkaException:
                pass  # partitions moved meanwhile: their next owner reads from the last commit

    def close(self) -> None:
        self.consumer.close()


def settle(members: list[Member], predicate, what: str, timeout: float = 60) -> None:
    def check() -> bool:
        for m in members:
            m.poll()
        return bool(predicate())

    wait_until(check, timeout, what, interval=0)


def group_description(bootstrap: str, group: str):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    result = admin.describe_consumer_groups([group])[group].result(20)
    del admin  # only once the result is in
    return result


def test_two_members_split_the_topic_and_read_every_record_once(cluster) -> None:
    topic, group = "kip848-split", "kip848-split-group"
    create_topic(cluster, topic, PARTITIONS, wait_for_leaders=True)
    a = Member(cluster.bootstrap, group, topic)
    b = Member(cluster.bootstrap, group, topic)
    try:
        settle(
            [a, b],
            lambda: len(a.owned()) == 3 and len(b.owned()) == 3 and not a.owned() & b.owned(),
            "3 partitions each",
        )
        produce(cluster.bootstrap, topic, 3000)
        settle([a, b], lambda: len(a.values) + len(b.values) >= 3000, "3000 records read")
        seen = a.values + b.values
        assert len(seen) == len(set(seen)) == 3000
        described = group_description(cluster.bootstrap, group)
        assert described.type == ConsumerGroupType.CONSUMER
        assert len(described.members) == 2
        assigned = sorted(tp.partition for m in described.members for tp in m.assignment.topic_partitions)
        assert assigned == list(range(PARTITIONS))
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})  # alive until the result
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(20)
        assert group in {g.group_id for g in listed.valid}
        a.close()
        start = time.monotonic()
        settle([b], lambda: b.owned() == set(range(PARTITIONS)), "b owning all 6 after a left", timeout=30)
        assert time.monotonic() - start < 10
    finally:
        b.close()


def test_committed_offsets_count_for_the_next_member_and_the_empty_group_can_be_deleted(cluster) -> None:
    topic, group = "kip848-commit", "kip848-commit-group"
    create_topic(cluster, topic, PARTITIONS, wait_for_leaders=True)
    produce(cluster.bootstrap, topic, 600)
    first = Member(cluster.bootstrap, group, topic)
    try:
        settle([first], lambda: len(first.values) >= 600, "600 records read")
    finally:
        first.close()
    produce(cluster.bootstrap, topic, 60, b"later-")
    second = Member(cluster.bootstrap, group, topic)
    try:
        settle([second], lambda: len(second.values) >= 60, "the 60 new records")
        assert len(second.values) == 60
    finally:
        second.close()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.delete_consumer_groups([group], request_timeout=20)[group].result(20)
    listed = admin.list_consumer_groups().result(20)
    assert group not in {g.group_id for g in listed.valid}


KILLED_MEMBER = textwrap.dedent(
    """
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                  "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    c.subscribe([sys.argv[3]])
    while True:
        c.poll(0.1)
        if c.assignment():
            print("assigned", flush=True)
    """
)


def test_a_killed_member_is_fenced_after_the_session_timeout(cluster) -> None:
    topic, group = "kip848-fence", "kip848-fence-group"
    create_topic(cluster, topic, PARTITIONS, wait_for_leaders=True)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(
        ResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry("consumer.session.timeout.ms", "6000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(20)
    described = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)])
    configs = next(iter(described.values())).result(20)
    assert configs["consumer.session.timeout.ms"].value == "6000"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_MEMBER, cluster.bootstrap, group, topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    survivor = None
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "assigned"
        survivor = Member(cluster.bootstrap, group, topic)
        settle([survivor], lambda: len(survivor.owned()) == 3, "the partitions split")
        child.kill()
        child.wait(10)
        killed_at = time.monotonic()
        settle([survivor], lambda: survivor.owned() == set(range(PARTITIONS)), "the dead member's partitions")
        assert time.monotonic() - killed_at >= 4  # moved by the session timeout, not before
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        if survivor is not None:
            survivor.close()


def test_classic_members_cannot_join_a_consumer_group(cluster) -> None:
    topic, group = "kip848-mixed", "kip848-mixed-group"
    create_topic(cluster, topic, 1, wait_for_leaders=True)
    modern = Member(cluster.bootstrap, group, topic)
    classic = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": group, "session.timeout.ms": 6000}
    )
    errors: list = []
    try:
        settle([modern], lambda: modern.owned() == {0}, "the partition")
        classic.subscribe([topic], on_assign=lambda c, p: errors.append("assigned"))

        def refused() -> bool:
            msg = classic.poll(0.2)
            modern.poll()
            if msg is not None and msg.error() is not None:
                errors.append(msg.error().code())
            return KafkaError.INCONSISTENT_GROUP_PROTOCOL in errors

        wait_until(refused, 30, "INCONSISTENT_GROUP_PROTOCOL for the classic member", interval=0)
        from kafka.protocol.api_key import ApiKey

        from tests.raw_request import raw_request

        port = next(iter(cluster.ports.values()))
        # DescribeGroups before v6 answers a group that is not classic as Dead, as Kafka does
        described = raw_request(port, ApiKey.DescribeGroups, 4, {"groups": [group]}).groups[0]
        assert (described.error_code, described.group_state, list(described.members)) == (0, "Dead", [])
        listed = raw_request(port, ApiKey.ListGroups, 5, {"states_filter": [], "types_filter": ["Consumer"]})
        row = next(g for g in listed.groups if g.group_id == group)
        assert (row.group_type, row.protocol_type, row.group_state) == ("consumer", "consumer", "Stable")
        classic_only = raw_request(
            port, ApiKey.ListGroups, 5, {"states_filter": [], "types_filter": ["classic"]}
        )
        assert group not in {g.group_id for g in classic_only.groups}
        assert "assigned" not in errors
    finally:
        classic.close()
        modern.close()


def test_a_regex_subscription_gets_the_matching_topics(cluster) -> None:
    create_topic(cluster, "kip848-re-a", 2, wait_for_leaders=True)
    create_topic(cluster, "kip848-re-b", 2, wait_for_leaders=True)
    create_topic(cluster, "kip848-other", 2, wait_for_leaders=True)
    member = Member(cluster.bootstrap, "kip848-re-group", "^kip848-re-.*")
    try:
        settle(
            [member],
            lambda: (
                {(tp.topic, tp.partition) for tp in member.consumer.assignment()}
                == {(t, p) for t in ("kip848-re-a", "kip848-re-b") for p in range(2)}
            ),
            "the partitions of the matching topics",
        )
        described = group_description(cluster.bootstrap, "kip848-re-group")
        assert described.type == ConsumerGroupType.CONSUMER
    finally:
        member.close()


def test_the_group_and_its_offsets_survive_losing_the_coordinator(cluster_factory) -> None:
    from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
    from brokerd.coordinator.records import partition_for

    cluster = cluster_factory(3, {"broker.session.timeout.ms": "1500", **FAST_GROUPS})
    topic, group = "kip848-failover", "kip848-failover-group"
    create_topic(cluster, topic, PARTITIONS, 3, wait_for_leaders=True)
    produce(cluster.bootstrap, topic, 600)
    a = Member(cluster.bootstrap, group, topic)
    b = Member(cluster.bootstrap, group, topic)
    try:
        settle([a, b], lambda: len(a.owned()) == 3 and len(b.owned()) == 3, "3 partitions each")
        settle([a, b], lambda: len(a.values) + len(b.values) >= 600, "600 records read")
        before = {"a": a.owned(), "b": b.owned()}
        offsets_partition = partition_for(group, 10)
        coordinator = cluster.state.topics()[OFFSETS_TOPIC].partitions[offsets_partition].leader
        cluster.kill(coordinator)
        wait_until(
            lambda: (
                cluster.state.topics()[OFFSETS_TOPIC].partitions[offsets_partition].leader
                not in (coordinator, -1)
            ),
            30,
            "a new coordinator",
        )
        produce(cluster.bootstrap, topic, 300, b"after-")
        settle([a, b], lambda: len(a.values) + len(b.values) >= 900, "the 300 records after the failover", 90)
        seen = a.values + b.values
        assert len(seen) == len(set(seen)) == 900  # nobody re-read: the group and its offsets were kept
        assert {"a": a.owned(), "b": b.owned()} == before
        described = group_description(cluster.bootstrap, group)
        assert described.type == ConsumerGroupType.CONSUMER and len(described.members) == 2
    finally:
        a.close()
        b.close()


def heartbeat(port: int, version: int = 1, **fields: object):
    from kafka.protocol.api_key import ApiKey

    from tests.raw_request import raw_request

    body = {
        "group_id": "kip848-wire",
        "member_id": "wire-member-1",
        "member_epoch": 0,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": ["kip848-wire-topic"],
        "topic_partitions": [],
        **fields,
    }
    return raw_request(port, ApiKey.ConsumerGroupHeartbeat, version, body)


def test_heartbeats_are_answered_with_kafkas_errors(cluster) -> None:
    port = next(iter(cluster.ports.values()))
    create_topic(cluster, "kip848-wire-topic", 2, wait_for_leaders=True)
    from kafka.protocol.api_key import ApiKey

    from tests.raw_request import raw_request

    def first_heartbeat():
        # as a client does: FindCoordinator first (it creates __consumer_offsets)
        raw_request(port, ApiKey.FindCoordinator, 2, {"key": "kip848-wire", "key_type": 0})
        response = heartbeat(port)
        return response if response.error_code == 0 else None

    joined = wait_until(first_heartbeat, 30, "the first heartbeat", interval=0.2)
    assert joined.member_id == "wire-member-1" and joined.member_epoch >= 1
    assert sorted(joined.assignment.topic_partitions[0].partitions) == [0, 1]
    first_request = heartbeat(port, rebalance_timeout_ms=-1)
    assert first_request.error_code == 42  # INVALID_REQUEST
    assert first_request.error_message == "RebalanceTimeoutMs must be provided in first request."
    assert heartbeat(port, server_assignor="sticky").error_code == 112  # UNSUPPORTED_ASSIGNOR
    ahead = heartbeat(port, member_epoch=joined.member_epoch + 5, topic_partitions=None)
    assert ahead.error_code == 110  # FENCED_MEMBER_EPOCH
    assert heartbeat(port, member_id="stranger", member_epoch=3).error_code == 25  # UNKNOWN_MEMBER_ID
    # ConsumerGroupHeartbeat v0: the coordinator makes the member id
    v0 = heartbeat(port, 0, member_id="")
    assert v0.error_code == 0 and v0.member_id
    left = heartbeat(port, member_epoch=-1)
    assert (left.error_code, left.member_epoch) == (0, -1)


def test_a_static_member_that_comes_back_gets_its_partitions_again(cluster) -> None:
    topic, group = "kip848-static", "kip848-static-group"
    create_topic(cluster, topic, PARTITIONS, wait_for_leaders=True)
    a = Member(cluster.bootstrap, group, topic, **{"group.instance.id": "instance-a"})
    b = Member(cluster.bootstrap, group, topic, **{"group.instance.id": "instance-b"})
    restarted = None
    try:
        settle([a, b], lambda: len(a.owned()) == 3 and len(b.owned()) == 3, "3 partitions each")
        before = a.owned()
        a.close()
        restarted = Member(cluster.bootstrap, group, topic, **{"group.instance.id": "instance-a"})
        settle([restarted, b], lambda: restarted.owned() == before, "instance-a's partitions back")
        assert len(b.owned()) == 3 and not b.owned() & before
    finally:
        b.close()
        if restarted is not None:
            restarted.close()


def test_an_empty_classic_group_becomes_a_consumer_group_with_its_offsets(cluster) -> None:
    topic, group = "kip848-upgrade", "kip848-upgrade-group"
    create_topic(cluster, topic, PARTITIONS, wait_for_leaders=True)
    produce(cluster.bootstrap, topic, 40)
    classic = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    classic.subscribe([topic])
    read: list = []
    try:

        def classic_read_all() -> bool:
            read.extend(m for m in classic.consume(100, 0.1) if m.error() is None)
            return len(read) >= 40

        wait_until(classic_read_all, 30, "the classic member to read 40 records", interval=0)
        classic.commit(asynchronous=False)
    finally:
        classic.close()
    produce(cluster.bootstrap, topic, 10, b"new-")
    modern = Member(cluster.bootstrap, group, topic)
    try:
        settle([modern], lambda: len(modern.values) >= 10, "the records after the classic commit")
        assert sorted(modern.values) == sorted(b"new-%d" % i for i in range(10))
        assert group_description(cluster.bootstrap, group).type == ConsumerGroupType.CONSUMER
    finally:
        modern.close()


def test_group_configs_are_checked_against_the_brokers_bounds(cluster) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

    def alter(name: str, value: str) -> None:
        entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.GROUP, "kip848-configs", incremental_configs=[entry])
        admin.incremental_alter_configs([resource])[resource].result(20)

    with pytest.raises(KafkaException) as refused:
        alter("consumer.session.timeout.ms", "1000")  # the test cluster's minimum is 6000
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "consumer.session.timeout.ms must be greater than or equal to" in refused.value.args[0].str()
    alter("share.auto.offset.reset", "earliest")
    described = admin.describe_configs([ConfigResource(ResourceType.GROUP, "kip848-configs")])
    configs = next(iter(described.values())).result(20)
    assert configs["share.auto.offset.reset"].value == "earliest"
    assert configs["consumer.session.timeout.ms"].value == "45000"  # the broker's default
    assert configs["consumer.heartbeat.interval.ms"].value == "1000"  # the test cluster's

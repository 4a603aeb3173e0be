"""MirrorMaker 2's pieces as plain Python: the replication policies' names, the topic and
group filters, the offset-sync, checkpoint and heartbeat records byte for byte, which records
get offset syncs, MM2's translation rule, and the mirror connectors' config checks."""

import struct

import pytest

from connect import plugins
from connect.mirror import policy
from connect.mirror.records import Checkpoint, Heartbeat, OffsetSync
from connect.mirror.settings import SOURCE_KEYS, MirrorSettings
from connect.mirror.translation import OffsetSyncStore, sync_points

pytestmark = pytest.mark.unit


def _settings(**config: str) -> MirrorSettings:
    given = {"source.cluster.alias": "east", "target.cluster.alias": "west", **config}
    return MirrorSettings.of(given, {"kafka.bootstrap.servers": "own:9092"}, SOURCE_KEYS)


def test_default_policy_prefixes_the_source_alias_and_identity_keeps_names():
    default = policy.policy(policy.DEFAULT_POLICY, ".")
    assert default.format_remote_topic("east", "orders") == "east.orders"
    assert default.topic_source("east.orders") == "east" and default.topic_source("orders") is None
    assert policy.policy(policy.DEFAULT_POLICY, "_").format_remote_topic("east", "orders") == "east_orders"
    identity = policy.policy(policy.IDENTITY_POLICY, ".")
    assert identity.format_remote_topic("east", "orders") == "orders"
    assert identity.format_remote_topic("east", "heartbeats") == "east.heartbeats"
    assert identity.topic_source("a.b") is None and identity.topic_source("east.heartbeats") == "east"
    assert policy.offset_syncs_topic("west") == "mm2-offset-syncs.west.internal"
    assert policy.checkpoints_topic("east") == "east.checkpoints.internal"


def test_which_topics_are_replicated():
    settings = _settings(topics="orders.*, clicks", **{"topics.exclude": "orders-secret"})
    assert [t for t in ("orders", "orders-eu", "clicks", "clicks2") if settings.replicates(t)] == [
        "orders",
        "orders-eu",
        "clicks",
    ]
    assert not settings.replicates("orders-secret")
    every = _settings()
    unwanted = ("__consumer_offsets", "x.internal", "mm2-offset-syncs.west.internal", "a.replica", ".x")
    assert not any(every.replicates(t) for t in unwanted)
    assert every.replicates("east.orders")  # a remote topic from elsewhere goes on
    assert not every.replicates("west.orders")  # the target's own, back where it came from
    assert every.replicates("heartbeats")


def test_groups_filter_excludes_connect_and_console_groups_by_default():
    groups = MirrorSettings.of({}, {}, plugins.find("MirrorCheckpoint").keys).group_filter()
    assert groups.passes("billing") and not groups.passes("connect-foo")
    assert not groups.passes("console-consumer-1") and not groups.passes("__x")


def test_each_side_is_the_workers_cluster_unless_it_names_brokers():
    both = _settings()
    assert both.source == both.target == {"bootstrap.servers": "own:9092"}
    other = _settings(
        **{"source.cluster.bootstrap.servers": "far:9092", "source.cluster.security.protocol": "SSL"}
    )
    assert other.source == {"bootstrap.servers": "far:9092", "security.protocol": "SSL"}
    assert other.offset_syncs_cluster == other.source
    assert other.offset_syncs_topic == "mm2-offset-syncs.west.internal"
    on_target = _settings(**{"offset-syncs.topic.location": "target"})
    assert on_target.offset_syncs_topic == "mm2-offset-syncs.east.internal"


def test_records_are_encoded_as_mm2_encodes_them():
    sync = OffsetSync("orders", 3, 100, 42)
    assert sync.key() == b"\x00\x06orders" + struct.pack(">i", 3)
    assert sync.value() == struct.pack(">qq", 100, 42)
    assert OffsetSync.decode(sync.key(), sync.value()) == sync
    checkpoint = Checkpoint("billing", "east.orders", 1, 500, 480, "meta")
    assert checkpoint.key() == b"\x00\x07billing\x00\x0beast.orders" + struct.pack(">i", 1)
    assert checkpoint.value() == struct.pack(">hqq", 0, 500, 480) + b"\x00\x04meta"
    assert Checkpoint.decode(checkpoint.key(), checkpoint.value()) == checkpoint
    beat = Heartbeat("east", "west", 1700000000000)
    assert beat.key() == b"\x00\x04east\x00\x04west"
    assert beat.value() == struct.pack(">hq", 0, 1700000000000)


def test_syncs_every_second_record_at_gaps_and_at_both_ends():
    assert sync_points([5, 6, 7, 8, 9, 10]) == [0, 2, 4, 5]
    assert sync_points([0, 1, 2, 10, 11, 12, 13]) == [0, 2, 3, 5, 6]
    assert sync_points([7]) == [0]
    assert sync_points([]) == []


def test_mm2s_rule_translates_exactly_from_the_syncs_written():
    store = OffsetSyncStore()
    assert store.translate("t", 0, 5) is None  # no sync yet: nothing is translated
    upstream = [0, 1, 2, 3, 10, 11, 12, 13, 14]  # a gap (compaction, transaction markers)
    floor = 1000  # the remote partition held 1000 records before
    for i in sync_points(upstream):
        store.add(OffsetSync("t", 0, upstream[i], floor + i))
    # a group at U is exactly at the remote offset of the first record at or after U
    for position in range(0, 16):
        expected = floor + sum(1 for u in upstream if u < position)
        assert store.translate("t", 0, position) == expected, position
    # MM2's rule itself: the latest sync at or before U; +1 unless U is that sync's offset
    sparse = OffsetSyncStore()
    sparse.add(OffsetSync("t", 0, 100, 7))
    sparse.add(OffsetSync("t", 0, 200, 90))
    assert [sparse.translate("t", 0, u) for u in (99, 100, 150, 200, 201)] == [None, 7, 8, 90, 91]


def test_mirror_connectors_are_listed_and_checked_in_connects_words():
    classes = [p["class"] for p in plugins.listing(connectors_only=True)]
    for name in ("MirrorSource", "MirrorCheckpoint", "MirrorHeartbeat"):
        assert f"org.apache.kafka.connect.mirror.{name}Connector" in classes
        assert plugins.find(name) is plugins.find(f"{name}Connector")
    source = plugins.find("MirrorSource")
    assert source.validation({"connector.class": "MirrorSource"}).messages() == [
        'Missing required configuration "name" which has no default value.'
    ]
    bad = {
        "name": "m",
        "connector.class": "MirrorSource",
        "offset-syncs.topic.location": "elsewhere",
        "replication.policy.class": "Nope",
    }
    assert source.validation(bad).messages() == [
        "Invalid value Nope for configuration replication.policy.class: Class Nope could not be found.",
        "Invalid value elsewhere for configuration offset-syncs.topic.location: "
        "String must be one of: source, target",
    ]


class _Record:
    def __init__(self, offset: int, sync: OffsetSync) -> None:
        self._offset, self._key, self._value = offset, sync.key(), sync.value()

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes:
        return self._value


def test_a_read_of_the_offset_syncs_cut_short_goes_on_from_where_it_stopped(monkeypatch):
    """A read that times out (kctl's reader ends a range early without failOnDataLoss) must
    not skip the syncs it did not get: without them a group's offset never translates."""
    from connect.mirror import checkpoint

    syncs = [_Record(i, OffsetSync("orders", 0, 10 * i, i)) for i in range(4)]
    delivered = [2, 4]  # the first round's read stops after two syncs
    read_from = []

    class Offsets:
        def __init__(self, client):
            pass

        def earliest(self, tps):
            return {tp: 0 for tp in tps}

        def latest(self, tps):
            return {tp: len(syncs) for tp in tps}

    def read_range(client, span, fail_on_data_loss, timeout_s):
        read_from.append(span.start)
        yield syncs[span.start : delivered.pop(0)]

    class Reachable:
        def __init__(self, client):
            pass

        def topics(self):
            return {"mm2-offset-syncs.west.internal": 1}

    monkeypatch.setattr(checkpoint, "Cluster", Reachable)
    monkeypatch.setattr(checkpoint, "ClusterOffsets", Offsets)
    monkeypatch.setattr(checkpoint, "read_range", read_range)
    rounds = checkpoint.CheckpointRounds(
        MirrorSettings.of(
            {
                "source.cluster.alias": "east",
                "target.cluster.alias": "west",
                "source.cluster.bootstrap.servers": "s:1",
            },
            {"kafka.bootstrap.servers": "own:9092"},
            plugins.find("MirrorCheckpoint").keys,
        )
    )
    every = OffsetSyncStore()
    for record in syncs:
        every.add(OffsetSync.decode(record.key(), record.value()))
    rounds._read_syncs()
    assert rounds.store.translate("orders", 0, 30) != every.translate("orders", 0, 30)  # sync 3 not read
    rounds._read_syncs()
    assert read_from == [0, 2]
    assert rounds.store.translate("orders", 0, 30) == every.translate("orders", 0, 30) == 3

"""In-memory fakes of the ports in brokerd/ports, so the coordinators run in-process: no
broker, no socket, no file. Logs keep real record batches, with offsets assigned as a
leader's log assigns them, so a coordinator that loads a partition replays what another
one wrote."""

from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka.errors import NotLeaderForPartitionError, UnknownTopicOrPartitionError

from brokerd.config import BrokerConfig
from brokerd.coordinator.classic_group_coordinator import ClassicGroupCoordinator, GroupConfig
from brokerd.coordinator.consumer_group.coordinator import ConsumerGroupConfig, ConsumerGroupCoordinator
from brokerd.coordinator.group_coordinator import GroupCoordinator
from brokerd.coordinator.group_metadata_manager import GroupMetadataManager
from brokerd.coordinator.offset_metadata_manager import OffsetMetadataManager
from brokerd.coordinator.offsets_partitions import OffsetsPartitions
from brokerd.coordinator.share_group.share_group_coordinator import ShareGroupConfig, ShareGroupCoordinator
from brokerd.group_configs import GroupConfigs
from brokerd.storage.control_batch import build_end_txn_marker
from brokerd.storage.partition_log import AppendInfo
from brokerd.storage.record_batch import iter_batch_spans

TopicPartition = tuple[str, int]
BROKER_ID = 1
_BASE_OFFSET = struct.Struct(">q")  # the first field of a v2 record batch


class FakeLog:
    """A log that is one byte string of batches; reads return every batch from the one
    holding the offset asked for."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.log_start_offset = 0
        self.log_end_offset = 0
        self._positions: list[tuple[int, int]] = []  # (base offset, position) of each batch

    def append(self, batch: bytes) -> AppendInfo:
        stamped = bytearray(batch)
        _BASE_OFFSET.pack_into(stamped, 0, self.log_end_offset)
        _, base, last, _ = next(iter_batch_spans(stamped, 0, len(stamped)))
        self._positions.append((base, len(self.data)))
        self.data += stamped
        self.log_end_offset = last + 1
        return AppendInfo(base, last, -1, -1)

    def read(self, offset: int, max_bytes: int) -> bytes:
        position = next((p for base, p in reversed(self._positions) if base <= offset), 0)
        return bytes(self.data[position:])


class FakeReplica:
    """A replica led here unless ``is_leader`` is cleared; ``append_error`` and
    ``ack_error`` make appends fail as a leader's do (ISR too small, replicas slow)."""

    def __init__(self, leader_epoch: int = 0) -> None:
        self.is_leader = True
        self.leader_epoch = leader_epoch
        self.log = FakeLog()
        self.append_error: Exception | None = None
        self.ack_error: Exception | None = None

    def append_as_leader(self, batch: bytes, acks: int) -> AppendInfo:
        self._check_append()
        return self.log.append(batch)

    def append_txn_marker(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> AppendInfo:
        self._check_append()
        return self.log.append(
            build_end_txn_marker(
                producer_id, producer_epoch, commit, coordinator_epoch, int(time.time() * 1000)
            )
        )

    async def wait_for_ack(self, last_offset: int, timeout_s: float) -> None:
        if self.ack_error is not None:
            raise self.ack_error

    def _check_append(self) -> None:
        if not self.is_leader:
            raise NotLeaderForPartitionError("not the leader")
        if self.append_error is not None:
            raise self.append_error


class FakeReplicas:
    """The replicas this broker hosts: ``lead`` adds one."""

    def __init__(self) -> None:
        self.partitions: dict[TopicPartition, FakeReplica] = {}

    def lead(self, topic: str, index: int, leader_epoch: int = 0) -> FakeReplica:
        replica = self.partitions[(topic, index)] = FakeReplica(leader_epoch)
        return replica

    def get_leader(self, topic: str, index: int) -> FakeReplica:
        replica = self.partitions.get((topic, index))
        if replica is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{index} is not hosted here")
        if not replica.is_leader:
            raise NotLeaderForPartitionError(f"{topic}-{index} is not led here")
        return replica


class FakeMetadata:
    """The cluster as the fakes' broker sees it: the leader of each partition, by default
    this broker; ``refresh`` only counts."""

    def __init__(self) -> None:
        self.leaders: dict[TopicPartition, int] = {}
        self.live = {BROKER_ID}
        self.refreshes = 0

    def has_topic(self, name: str) -> bool:
        return any(topic == name for topic, _ in self.leaders)

    def partition_leader(self, topic: str, index: int) -> int | None:
        return self.leaders.get((topic, index))

    def live_broker_ids(self) -> set[int]:
        return set(self.live)

    def broker_address(self, broker_id: int) -> tuple[str, int] | None:
        return None

    def refresh(self) -> None:
        self.refreshes += 1

    def partition_count(self, topic: str) -> int | None:
        return sum(t == topic for t, _ in self.leaders) or None

    def topic_partitions(self) -> dict[str, tuple[uuid.UUID, int]]:
        topics = {t for t, _ in self.leaders}
        return {t: (uuid.uuid5(uuid.NAMESPACE_OID, t), self.partition_count(t) or 0) for t in topics}


class FakeProducerIds:
    def __init__(self) -> None:
        self.next = 1000

    def next_id(self) -> int:
        self.next += 1
        return self.next - 1


class FakeClock:
    """A clock that moves only when told; callable as time.monotonic (seconds)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def hosted(replicas: FakeReplicas, metadata: FakeMetadata, topic: str, partitions: int) -> None:
    """Make this broker the leader of every partition of ``topic``."""
    for index in range(partitions):
        replicas.lead(topic, index)
        metadata.leaders[(topic, index)] = BROKER_ID


class NoGroupConfigs:
    """No group has configs of its own: the broker's defaults apply."""

    def group_configs(self, group_id: str) -> dict[str, str]:
        return {}


@dataclass
class GroupCoordinatorParts:
    coordinator: GroupCoordinator
    groups: GroupMetadataManager
    offsets: OffsetMetadataManager
    classic: ClassicGroupCoordinator


def group_coordinator(
    replicas: FakeReplicas,
    metadata: FakeMetadata,
    num_partitions: int,
    retention_ms: int,
    clock: Callable[[], float] = time.monotonic,
    initial_rebalance_delay_ms: int = 0,
) -> GroupCoordinatorParts:
    """The group coordinator and its parts, built as GroupCoordinator.create builds them."""
    config = BrokerConfig(BROKER_ID, Path("unused"), 9092)
    configs = GroupConfigs(config, NoGroupConfigs())
    partitions = OffsetsPartitions(BROKER_ID, num_partitions, replicas, metadata)
    groups = GroupMetadataManager(partitions, clock)
    offsets = OffsetMetadataManager(retention_ms, partitions, groups)
    classic = ClassicGroupCoordinator(GroupConfig(initial_rebalance_delay_ms), groups)
    coordinator = GroupCoordinator(
        partitions,
        groups,
        offsets,
        classic,
        ConsumerGroupCoordinator(ConsumerGroupConfig.from_config(config), groups, metadata, configs, clock),
        ShareGroupCoordinator(ShareGroupConfig.from_config(config), groups, metadata, configs, clock),
        configs,
    )
    return GroupCoordinatorParts(coordinator, groups, offsets, classic)

"""The leader of a __share_group_state partition refuses a share-partition snapshot older
than the newest of its key, before it reaches the log: a real partition and log, in-process.
A deposed data-partition leader's late snapshot (an older leader epoch) is refused
FENCED_LEADER_EPOCH, one written from state loaded before an admin reset (an older state
epoch) FENCED_STATE_EPOCH; the newest epochs are rebuilt from the log by a new leader of
the state partition; and the persister gives up on such an answer instead of retrying."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from kafka.errors import FencedLeaderEpochError, FencedStateEpochError
from kafka.record.memory_records import MemoryRecords

from brokerd.coordinator.records import build_batch, read_whole_log
from brokerd.partition import Partition
from brokerd.share.share_state import SHARE_STATE_TOPIC, ShareKey, ShareState
from brokerd.share.share_state_epochs import ShareStateEpochs
from brokerd.share.state_persister import ShareStateTopic
from brokerd.state import PartitionRegistration
from brokerd.storage.log_config import LogConfig
from brokerd.storage.partition_log import PartitionLog

pytestmark = pytest.mark.unit

KEY = ShareKey("g", "00" * 16, 0)
OTHER = ShareKey("g", "00" * 16, 1)


class Replicas:
    """The HostedReplicas port: the state partition this broker leads."""

    def __init__(self, partition: Partition) -> None:
        self.partitions = {(SHARE_STATE_TOPIC, partition.index): partition}

    def get_leader(self, topic: str, index: int) -> Partition:
        return self.partitions[(topic, index)]


@pytest.fixture
def state_partition(tmp_path) -> Partition:
    """__share_group_state-0, led here at leader epoch 3, alone in its ISR."""
    log = PartitionLog.open(tmp_path / f"{SHARE_STATE_TOPIC}-0", LogConfig.from_configs({}))
    partition = Partition(1, SHARE_STATE_TOPIC, 0, log, lambda p, isr: None)
    partition.update(PartitionRegistration(0, [1], leader=1, leader_epoch=3, isr=[1]))
    return partition


def snapshot(start_offset: int, leader_epoch: int, state_epoch: int = 0, key: ShareKey = KEY) -> bytes:
    return build_batch([(key.encode(), ShareState(start_offset, leader_epoch, (), state_epoch).encode())])


def logged(partition: Partition) -> list[tuple[ShareKey | None, ShareState]]:
    """Every snapshot in the state partition's log, in order."""
    found = []
    for chunk in read_whole_log(partition.log):
        batches = MemoryRecords(chunk)
        while batches.has_next():
            for record in batches.next_batch():
                found.append((ShareKey.decode(record.key), ShareState.decode(record.value)))
    return found


def test_a_deposed_leaders_late_snapshot_is_refused_and_never_logged(state_partition):
    """The new leader of the data partition (leader epoch 2) wrote SPSO 10; the old one
    (leader epoch 1), paused between its leadership check and its write, then delivers SPSO
    5. It is refused, so compaction cannot keep it over the new leader's."""
    epochs = ShareStateEpochs(Replicas(state_partition))
    epochs.append(0, state_partition, snapshot(10, leader_epoch=2), acks=-1)
    with pytest.raises(FencedLeaderEpochError):
        epochs.append(0, state_partition, snapshot(5, leader_epoch=1), acks=-1)
    assert logged(state_partition) == [(KEY, ShareState(10, 2))]


def test_a_snapshot_of_an_older_state_epoch_is_refused_whatever_its_leader_epoch(state_partition):
    """An admin reset the share partition (state epoch 1); a leader still writing the state
    it loaded before (state epoch 0) is refused FENCED_STATE_EPOCH, even at a newer leader
    epoch. Snapshots of other share partitions, and at the newest epochs, are taken."""
    epochs = ShareStateEpochs(Replicas(state_partition))
    epochs.append(0, state_partition, snapshot(0, leader_epoch=1, state_epoch=1), acks=-1)
    with pytest.raises(FencedStateEpochError):
        epochs.append(0, state_partition, snapshot(7, leader_epoch=2, state_epoch=0), acks=-1)
    epochs.append(0, state_partition, snapshot(3, leader_epoch=1, state_epoch=1), acks=-1)
    epochs.append(0, state_partition, snapshot(4, leader_epoch=0, key=OTHER), acks=-1)
    assert [state.start_offset for _, state in logged(state_partition)] == [0, 3, 4]


def test_a_new_leader_of_the_state_partition_rebuilds_the_newest_epochs_from_its_log(state_partition):
    """What one leader of the state partition took is fenced by the next (a broker that
    starts, or takes the partition over, knows the newest epochs from the log, without
    having seen the writes)."""
    ShareStateEpochs(Replicas(state_partition)).append(0, state_partition, snapshot(10, 2), acks=-1)
    state_partition.update(
        PartitionRegistration(0, [1], leader=1, leader_epoch=4, isr=[1], partition_epoch=1)
    )
    with pytest.raises(FencedLeaderEpochError):
        ShareStateEpochs(Replicas(state_partition)).append(0, state_partition, snapshot(5, 1), acks=-1)
    assert logged(state_partition) == [(KEY, ShareState(10, 2))]


class FencingLeader:
    """A BrokerClient to the state partition's leader that refuses every write
    FENCED_LEADER_EPOCH, counting them."""

    def __init__(self) -> None:
        self.requests = 0

    async def request(self, api_key: int, version: int, fields: dict) -> SimpleNamespace:
        self.requests += 1
        refused = SimpleNamespace(error_code=FencedLeaderEpochError.errno)
        return SimpleNamespace(responses=[SimpleNamespace(partition_responses=[refused])])


class Metadata:
    """The MetadataView port: broker 1 leads every state partition."""

    def has_topic(self, name: str) -> bool:
        return True

    def partition_leader(self, topic: str, index: int) -> int:
        return 1

    def refresh(self) -> None:
        pass


def test_the_persister_gives_up_on_a_fenced_write_instead_of_retrying():
    """FENCED_LEADER_EPOCH on a write is the state partition refusing a stale snapshot, not
    a moving leader: the sender hears it at once (and stops leading the share partition)."""
    leader = FencingLeader()
    topic = ShareStateTopic(1, Metadata(), lambda broker_id, client_id, timeout_s: leader, lambda name: None)  # type: ignore[arg-type]

    async def write() -> None:
        await topic.write(KEY, ShareState(5, 1))

    with pytest.raises(FencedLeaderEpochError):
        asyncio.run(asyncio.wait_for(write(), 5))
    assert leader.requests == 1

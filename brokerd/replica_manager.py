"""The replicas this broker hosts: opening, reconfiguring and deleting their logs."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from kafka.errors import UnknownTopicOrPartitionError

from brokerd.partition import AlterIsr, Partition
from brokerd.state import TopicRecord
from brokerd.storage import LogConfig, PartitionLog
from brokerd.storage.checkpoint import CheckpointFile
from brokerd.storage.log_cleaner import LogCleaner

log = logging.getLogger(__name__)

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"


class ReplicaManager:
    def __init__(self, broker_id: int, data_dir: Path, alter_isr: AlterIsr):
        self.broker_id = broker_id
        self._alter_isr = alter_isr
        self.data_dir = data_dir
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._topic_ids: dict[str, str] = {}
        self._cleaner = LogCleaner()
        self._high_watermarks = CheckpointFile(data_dir / REPLICATION_OFFSET_CHECKPOINT)
        self._restored_high_watermarks = self._read_high_watermarks()
        self._checkpointed: list[tuple[str, int, int]] = []

    def apply_metadata(self, topics: dict[str, TopicRecord]) -> set[tuple[str, int]]:
        """Bring the hosted replicas in line with the cluster metadata; returns the partitions
        that got a new leader epoch (their followers must check for divergence)."""
        for name in list(self._topic_ids):
            if name not in topics or topics[name].topic_id != self._topic_ids[name]:
                self._delete_topic(name)
        fresh: set[tuple[str, int]] = set()
        for topic in topics.values():
            fresh |= self._apply_topic(topic)
        return fresh

    def _apply_topic(self, topic: TopicRecord) -> set[tuple[str, int]]:
        config = LogConfig.from_configs(topic.configs)
        self._topic_ids[topic.name] = topic.topic_id
        fresh = set()
        for index, record in topic.partitions.items():
            if self.broker_id not in record.replicas:
                self._stop_replica(topic.name, index)
                continue
            partition = self.partitions.get((topic.name, index))
            if partition is None:
                log_dir = self.data_dir / f"{topic.name}-{index}"
                partition = Partition(self.broker_id, topic.name, index,
                                      PartitionLog.open(log_dir, config), self._alter_isr,
                                      self._restored_high_watermarks.pop((topic.name, index), 0))
                self.partitions[(topic.name, index)] = partition
            elif partition.log.config != config:
                partition.log.update_config(config)
            if partition.update(record):
                fresh.add((topic.name, index))
        return fresh

    def _stop_replica(self, topic: str, index: int) -> None:
        """Kafka's StopReplica with deletion: a reassignment moved this replica elsewhere, so
        its log goes and this broker stops answering for the partition."""
        partition = self.partitions.pop((topic, index), None)
        if partition is not None:
            partition.stop()
            partition.log.delete()
            log.info("%s-%d moved away: replica deleted", topic, index)

    def _delete_topic(self, name: str) -> None:
        for key in [k for k in self.partitions if k[0] == name]:
            self.partitions.pop(key).log.delete()
        del self._topic_ids[name]
        log.info("deleted the replicas of topic %s", name)

    def delete_stray_logs(self) -> None:
        """Remove partition directories left by topics deleted while this broker was down."""
        hosted = {f"{t}-{p}" for t, p in self.partitions}
        for path in self.data_dir.iterdir():
            if path.is_dir() and path.name not in hosted:
                shutil.rmtree(path)
                log.info("removed stray log directory %s", path.name)

    def get(self, topic: str, index: int) -> Partition:
        partition = self.partitions.get((topic, index))
        if partition is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{index} is not hosted here")
        return partition

    def get_leader(self, topic: str, index: int) -> Partition:
        partition = self.get(topic, index)
        partition.require_leader()
        return partition

    def shrink_isrs(self, replica_lag_time_max_ms: int) -> None:
        for partition in self.partitions.values():
            partition.maybe_shrink_isr(replica_lag_time_max_ms)

    def leads_alone(self) -> bool:
        """True when no partition led here has another in-sync replica to hand over to."""
        return all(p.isr == [self.broker_id] for p in self.partitions.values() if p.is_leader)

    def enforce_retention(self, now_ms: int) -> None:
        """segment.ms rolls and retention.ms/bytes deletion; never beyond the high watermark."""
        for partition in self.partitions.values():
            partition.enforce_retention(now_ms)

    def clean_logs(self, now_ms: int) -> None:
        """Compact the logs of compacted topics that have enough new data, never past what
        consumers may read (the last stable offset, at most the high watermark)."""
        for partition in self.partitions.values():
            if "compact" in partition.log.config.cleanup_policy:
                self._cleaner.maybe_clean(partition.log, partition.last_stable_offset, now_ms)

    def flush_due(self, now_ms: int) -> None:
        """The flush.ms half of the flush policy (flush.messages is applied on append)."""
        for partition in self.partitions.values():
            partition.log.maybe_flush(now_ms)

    def status(self) -> dict[tuple[str, int], dict]:
        return {key: p.status() for key, p in self.partitions.items()}

    def checkpoint_high_watermarks(self) -> None:
        """Kafka's replication-offset-checkpoint: a restarted leader answers with the high
        watermark it had, not 0, before any follower has fetched. Written when it changed,
        every replica.high.watermark.checkpoint.interval.ms and on shutdown."""
        entries = sorted((t, i, p.high_watermark) for (t, i), p in self.partitions.items())
        if entries != self._checkpointed:
            self._high_watermarks.write(entries)
            self._checkpointed = entries

    def _read_high_watermarks(self) -> dict[tuple[str, int], int]:
        try:
            return {(topic, int(index)): int(offset)
                    for topic, index, offset in self._high_watermarks.read() or []}
        except ValueError:
            log.warning("ignoring malformed %s", self._high_watermarks.path)
            return {}

    def close(self) -> None:
        self.checkpoint_high_watermarks()
        for partition in self.partitions.values():
            partition.log.close()
        self.partitions.clear()

"""The replicas this broker hosts: opening, reconfiguring and deleting their logs."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Mapping
from pathlib import Path

from kafka.errors import UnknownTopicOrPartitionError

from brokerd.metadata.image import MetadataDelta
from brokerd.metadata.registration import PartitionRegistration
from brokerd.partition import AlterIsr, Partition
from brokerd.state import TopicImage
from brokerd.storage.checkpoint import CheckpointFile
from brokerd.storage.log_cleaner import LogCleaner
from brokerd.storage.log_config import LogConfig
from brokerd.storage.partition_log import PartitionLog

log = logging.getLogger(__name__)

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
MAX_LOG_OPENS_PER_ROUND = 200


class ReplicaManager:
    def __init__(self, broker_id: int, data_dir: Path, alter_isr: AlterIsr):
        self.broker_id = broker_id
        self._alter_isr = alter_isr
        self.data_dir = data_dir
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._topic_ids: dict[str, str] = {}
        self._configs: dict[str, LogConfig] = {}  # each topic's, with the broker's defaults
        self._log_defaults: dict[str, str] = {}
        self._status_json: dict[tuple[str, int], str] = {}  # the last published, encoded
        self._status_changed: set[tuple[str, int]] = set()  # to encode again at the next publish
        self._high_watermarks_changed = False
        self._led: set[tuple[str, int]] = set()  # partitions led here: the ISR shrink visits these
        self._written: set[tuple[str, int]] = set()  # logs with records: retention and flushes visit these
        self._pending: dict[tuple[str, int], None] = {}  # partition changes still to apply
        self._topics: Mapping[str, TopicImage] = {}
        self._cleaner = LogCleaner()
        self._high_watermarks = CheckpointFile(data_dir / REPLICATION_OFFSET_CHECKPOINT)
        self._restored_high_watermarks = self._read_high_watermarks()
        self._checkpointed: list[tuple[str, int, int]] = []

    def apply_metadata(
        self, topics: Mapping[str, TopicImage], delta: MetadataDelta, log_defaults: dict[str, str]
    ) -> set[tuple[str, int]]:
        """Bring the hosted replicas in line with what the metadata delta changed (all of it,
        when the delta is full or the broker-level log defaults changed); returns the
        partitions that got a new leader epoch (their followers must check for divergence).

        ``log_defaults`` are the broker-level topic config defaults (log.retention.ms, ...):
        they fill in what a topic does not set itself, as Kafka's
        LogConfig.fromProps(brokerDefaults, topicOverrides)."""
        everything = delta.full or log_defaults != self._log_defaults
        self._log_defaults = dict(log_defaults)
        maybe_gone = (
            self._topic_ids.keys()
            if everything
            else (delta.removed_topics | delta.created_topics) & self._topic_ids.keys()
        )
        for name in list(maybe_gone):
            if name not in topics or topics[name].topic_id != self._topic_ids[name]:
                self._delete_topic(name)
        whole = set(topics) if everything else (delta.created_topics | delta.topic_configs) & topics.keys()
        for name in whole:
            topic = topics[name]
            self._configs[name] = LogConfig.for_topic(topic.configs, log_defaults)
            self._topic_ids[name] = topic.topic_id
            self._pending.update(dict.fromkeys((name, index) for index in topic.partitions))
        self._pending.update(dict.fromkeys(delta.partitions))
        self._topics = topics
        return self.apply_pending()

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    def apply_pending(self) -> set[tuple[str, int]]:
        """Apply the queued partition changes; at most MAX_LOG_OPENS_PER_ROUND of them may open
        a new log, the rest wait for the next round, so a CreateTopics of thousands of
        partitions never keeps the broker from answering for long."""
        fresh: set[tuple[str, int]] = set()
        opened = 0
        for key in list(self._pending):
            topic = self._topics.get(key[0])
            record = topic.partitions.get(key[1]) if topic is not None else None
            if record is not None and key[0] in self._configs:
                if key not in self.partitions and self.broker_id in record.replicas:
                    if opened == MAX_LOG_OPENS_PER_ROUND:
                        break
                    opened += 1
                fresh |= self._apply_partition(key[0], key[1], record)
            del self._pending[key]
        return fresh

    def _apply_partition(self, topic: str, index: int, record: PartitionRegistration) -> set[tuple[str, int]]:
        if self.broker_id not in record.replicas:
            self._stop_replica(topic, index)
            return set()
        config = self._configs[topic]
        partition = self.partitions.get((topic, index))
        if partition is None:
            log_dir = self.data_dir / f"{topic}-{index}"
            partition = Partition(
                self.broker_id,
                topic,
                index,
                PartitionLog.open(log_dir, config),
                self._alter_isr,
                self._restored_high_watermarks.pop((topic, index), 0),
                self._partition_status_changed,
            )
            self.partitions[(topic, index)] = partition
        elif partition.log.config != config:
            partition.log.update_config(config)
        fresh = partition.update(record)
        if partition.is_leader:
            self._led.add((topic, index))
        else:
            self._led.discard((topic, index))
        return {(topic, index)} if fresh else set()

    def _partition_status_changed(self, partition: Partition) -> None:
        key = (partition.topic, partition.index)
        self._status_changed.add(key)
        self._high_watermarks_changed = True
        if partition.log.log_end_offset > 0:
            self._written.add(key)

    def _stop_replica(self, topic: str, index: int) -> None:
        """Kafka's StopReplica with deletion: a reassignment moved this replica elsewhere, so
        its log goes and this broker stops answering for the partition."""
        partition = self.partitions.pop((topic, index), None)
        if partition is not None:
            partition.stop()
            self._forget(topic, index)
            partition.log.delete()
            log.info("%s-%d moved away: replica deleted", topic, index)

    def _delete_topic(self, name: str) -> None:
        for key in [k for k in self.partitions if k[0] == name]:
            partition = self.partitions.pop(key)
            partition.stop()
            self._forget(*key)
            partition.log.delete()
        del self._topic_ids[name]
        self._configs.pop(name, None)
        log.info("deleted the replicas of topic %s", name)

    def _forget(self, topic: str, index: int) -> None:
        self._led.discard((topic, index))
        self._written.discard((topic, index))

    def delete_stray_logs(self) -> None:
        """Remove partition directories left by topics deleted while this broker was down."""
        hosted = {f"{t}-{p}" for t, p in (*self.partitions, *self._pending)}
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
        for key in list(self._led):
            self.partitions[key].maybe_shrink_isr(replica_lag_time_max_ms)

    def leads_alone(self) -> bool:
        """True when no partition led here has another in-sync replica to hand over to."""
        return all(self.partitions[key].isr == [self.broker_id] for key in self._led)

    def enforce_retention(self, now_ms: int) -> None:
        """segment.ms rolls and retention.ms/bytes deletion; never beyond the high watermark."""
        for partition in self._with_records():
            partition.enforce_retention(now_ms)

    def clean_logs(self, now_ms: int) -> None:
        """Compact the logs of compacted topics that have enough new data, never past what
        consumers may read (the last stable offset, at most the high watermark)."""
        for partition in self._with_records():
            if "compact" in partition.log.config.cleanup_policy:
                self._cleaner.maybe_clean(partition.log, partition.last_stable_offset, now_ms)

    def flush_due(self, now_ms: int) -> None:
        """The flush.ms half of the flush policy (flush.messages is applied on append)."""
        for partition in self._with_records():
            partition.log.maybe_flush(now_ms)

    def _with_records(self) -> list[Partition]:
        """The replicas whose logs ever held records: housekeeping has nothing to do on the
        others, however many there are."""
        return [self.partitions[key] for key in self._written]

    def status_document(self) -> bytes | None:
        """Every hosted replica's status as the JSON document `kctl watch` reads, or None when
        none changed since the last call. Only the replicas that told of a change are visited
        and encoded again (and leaders whose records wait for the high watermark, whose
        status shows for how long): an idle broker pays nothing per replica."""
        changed, self._status_changed = self._status_changed, set()
        for key in changed:
            partition = self.partitions.get(key)
            if partition is None:
                self._status_json.pop(key, None)
                continue
            self._status_json[key] = (
                json.dumps(f"{key[0]}:{key[1]}") + ":" + json.dumps(partition.status(), sort_keys=True)
            )
            if partition.status_changes_with_time:
                self._status_changed.add(key)
        return ("{" + ",".join(self._status_json.values()) + "}").encode() if changed else None

    def checkpoint_high_watermarks(self) -> None:
        """Kafka's replication-offset-checkpoint: a restarted leader answers with the high
        watermark it had, not 0, before any follower has fetched. Written when it changed,
        every replica.high.watermark.checkpoint.interval.ms and on shutdown."""
        if not self._high_watermarks_changed:
            return
        self._high_watermarks_changed = False
        entries = sorted((t, i, p.high_watermark) for (t, i), p in self.partitions.items())
        if entries != self._checkpointed:
            self._high_watermarks.write(entries)
            self._checkpointed = entries

    def _read_high_watermarks(self) -> dict[tuple[str, int], int]:
        try:
            return {
                (topic, int(index)): int(offset)
                for topic, index, offset in self._high_watermarks.read() or []
            }
        except ValueError:
            log.warning("ignoring malformed %s", self._high_watermarks.path)
            return {}

    def close(self) -> None:
        self.checkpoint_high_watermarks()
        for partition in self.partitions.values():
            partition.log.close()
        self.partitions.clear()

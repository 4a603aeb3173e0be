"""Topic-level log configuration, under Apache Kafka's names and defaults.

Clients and tools send these as strings (CreateTopics, AlterConfigs,
IncrementalAlterConfigs) and read them back as strings (DescribeConfigs), so
the string form is the source of truth: a ``LogConfig`` remembers which keys
were set explicitly and derives typed attributes from them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, TypeVar

from brokerd.storage.compression_codecs import CODEC_IDS, PRODUCER, codec_available

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


_N = TypeVar("_N", int, float)


class NotANumber(ValueError):
    """The text is not a number at all; Kafka then names the type it expected."""


def _number(text: str, kind: Callable[[str], _N]) -> _N:
    try:
        return kind(text.strip())
    except ValueError:
        raise NotANumber(text) from None


def _within(value: int | float, minimum: int | float, maximum: int | float) -> None:
    """Kafka's ConfigDef.Range, in its words."""
    if value < minimum:
        raise ValueError(f"Value must be at least {minimum}")
    if value > maximum:
        raise ValueError(f"Value must be no more than {maximum}")


def _integer(minimum: int, maximum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = _number(text, int)
        _within(value, minimum, maximum)
        return value

    return parse


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return text

    return parse


def _cleanup_policy(text: str) -> tuple[str, ...]:
    policies = tuple(part.strip() for part in text.split(","))
    if not policies or any(p not in ("delete", "compact") for p in policies):
        raise ValueError("must be a comma-separated list of delete and compact")
    return policies


def _ratio(text: str) -> float:
    value = _number(text, float)
    _within(value, 0.0, 1.0)
    return value


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return lowered == "true"


def _throttled_replicas(text: str) -> str:
    """Kafka's ThrottledReplicaListValidator: ``*`` or ``partition:broker`` pairs."""
    replicas = [part.strip() for part in text.split(",")]
    if text.strip() != "*" and not all(re.fullmatch(r"([0-9]+:[0-9]+)?", r) for r in replicas):
        raise ValueError(
            "must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )
    return text


def _metadata_version(text: str) -> str:
    """A Kafka release such as 2.8 or 3.0-IV1. Any is accepted and none changes anything:
    since 3.0 Kafka ignores message.format.version and writes record format v2, as brokerd does."""
    if not re.fullmatch(r"[0-9]+(\.[0-9]+){1,3}(-IV[0-9]+)?", text.strip()):  # 0.10.0.0, 2.8, 3.0-IV1
        raise ValueError("must be a Kafka version such as 3.0-IV1")
    return text


def _remote_storage_enable(text: str) -> bool:
    """Tiered storage needs a remote log manager, which brokerd has not; Kafka refuses the
    topic config in the same words when the broker's remote.log.storage.system.enable is false."""
    if _boolean(text):
        raise ValueError(
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage."
        )
    return False


def _gzip_level(text: str) -> int:
    """java.util.zip.Deflater's levels 1 to 9, or -1 for zlib's default."""
    value = _number(text, int)
    if value != -1 and not 1 <= value <= 9:
        raise ValueError("must be in [1,...,9] or -1")
    return value


def _compression_type(text: str) -> str:
    """Kafka's names; a codec whose Python module is missing here is refused up front rather
    than failing every produce later."""
    if text != PRODUCER and text not in CODEC_IDS:
        raise ValueError(f"must be one of {PRODUCER}, {', '.join(CODEC_IDS)}")
    if text != PRODUCER and not codec_available(text):
        raise ValueError(f"this broker cannot write {text}: its Python compression module is not installed")
    return text


class ConfigKey(NamedTuple):
    """One topic config: its Kafka name, DescribeConfigs type, default and parser."""

    name: str
    config_type: str  # Kafka's ConfigDef type name: INT, LONG, DOUBLE, STRING, LIST, BOOLEAN
    default: str
    parse: Callable[[str], object]
    doc: str

    @property
    def attribute(self) -> str:
        return self.name.replace(".", "_")


CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "segment.bytes",
        "INT",
        str(1 << 30),
        _integer(14, INT32_MAX),
        "Size at which the active segment is rolled.",
    ),
    ConfigKey(
        "segment.ms",
        "LONG",
        str(7 * 24 * 3600 * 1000),
        _integer(1, INT64_MAX),
        "Age after which the active segment is rolled even if not full.",
    ),
    ConfigKey(
        "segment.index.bytes",
        "INT",
        str(10 << 20),
        _integer(4, INT32_MAX),
        "Preallocated size of each offset and time index.",
    ),
    ConfigKey(
        "index.interval.bytes",
        "INT",
        "4096",
        _integer(0, INT32_MAX),
        "Bytes of batches between two sparse index entries.",
    ),
    ConfigKey(
        "retention.ms",
        "LONG",
        str(7 * 24 * 3600 * 1000),
        _integer(-1, INT64_MAX),
        "Delete segments whose newest timestamp is older than this; -1 keeps forever.",
    ),
    ConfigKey(
        "retention.bytes",
        "LONG",
        "-1",
        _integer(INT64_MIN, INT64_MAX),
        "Delete oldest segments while the partition is larger than this; -1 means no limit.",
    ),
    ConfigKey(
        "max.message.bytes",
        "INT",
        str(1024 * 1024 + 12),
        _integer(0, INT32_MAX),
        "Largest record batch the topic accepts.",
    ),
    ConfigKey(
        "message.timestamp.type",
        "STRING",
        "CreateTime",
        _one_of("CreateTime", "LogAppendTime"),
        "Keep the producer's timestamps or stamp the broker's append time.",
    ),
    ConfigKey(
        "min.insync.replicas",
        "INT",
        "1",
        _integer(1, INT32_MAX),
        "Replicas that must hold a batch before an acks=all produce succeeds.",
    ),
    ConfigKey(
        "flush.messages",
        "LONG",
        str(INT64_MAX),
        _integer(1, INT64_MAX),
        "Force an fsync after this many messages; the default leaves flushing to the OS.",
    ),
    ConfigKey(
        "flush.ms",
        "LONG",
        str(INT64_MAX),
        _integer(0, INT64_MAX),
        "Force an fsync when the oldest unflushed data is this old.",
    ),
    ConfigKey(
        "cleanup.policy",
        "LIST",
        "delete",
        _cleanup_policy,
        "delete (retention) and/or compact (keep the latest record of every key).",
    ),
    ConfigKey(
        "delete.retention.ms",
        "LONG",
        str(24 * 3600 * 1000),
        _integer(0, INT64_MAX),
        "How long a compacted topic keeps tombstones, so consumers see deletions.",
    ),
    ConfigKey(
        "min.cleanable.dirty.ratio",
        "DOUBLE",
        "0.5",
        _ratio,
        "Share of a compacted log written since its last cleaning that starts the next.",
    ),
    ConfigKey(
        "unclean.leader.election.enable",
        "BOOLEAN",
        "false",
        _boolean,
        "Allow an out-of-sync replica to become leader, losing data.",
    ),
    ConfigKey(
        "compression.type",
        "STRING",
        "producer",
        _compression_type,
        "producer keeps batches as sent; uncompressed, gzip, snappy, lz4 or zstd makes "
        "the leader recompress batches sent with another codec.",
    ),
    ConfigKey(
        "compression.gzip.level",
        "INT",
        "-1",
        _gzip_level,
        "Level of gzip the leader recompresses with; -1 is zlib's default (6).",
    ),
    ConfigKey(
        "compression.lz4.level",
        "INT",
        "9",
        _integer(1, 17),
        "Level of lz4 the leader recompresses with; liblz4 treats those above 12 as 12.",
    ),
    ConfigKey(
        "compression.zstd.level",
        "INT",
        "3",
        _integer(-131072, 22),
        "No effect: the kafka-python zstd encoder brokerd recompresses with takes no level "
        "and always uses zstd's default, 3.",
    ),
    ConfigKey(
        "segment.jitter.ms",
        "LONG",
        "0",
        _integer(0, INT64_MAX),
        "Random time up to this much taken off segment.ms for each new segment, so that "
        "the segments of many partitions do not all roll at once.",
    ),
    ConfigKey(
        "min.compaction.lag.ms",
        "LONG",
        "0",
        _integer(0, INT64_MAX),
        "A record stays uncompacted for at least this long after it is written.",
    ),
    ConfigKey(
        "max.compaction.lag.ms",
        "LONG",
        str(INT64_MAX),
        _integer(1, INT64_MAX),
        "A compacted log whose oldest uncleaned record is older than this is cleaned "
        "whatever its dirty ratio.",
    ),
    ConfigKey(
        "message.timestamp.before.max.ms",
        "LONG",
        str(INT64_MAX),
        _integer(0, INT64_MAX),
        "With CreateTime, refuse batches with a timestamp further than this in the past.",
    ),
    ConfigKey(
        "message.timestamp.after.max.ms",
        "LONG",
        str(INT64_MAX),
        _integer(0, INT64_MAX),
        "With CreateTime, refuse batches with a timestamp further than this in the future.",
    ),
    ConfigKey(
        "message.timestamp.difference.max.ms",
        "LONG",
        str(INT64_MAX),
        _integer(0, INT64_MAX),
        "Deprecated: the before and after bound of the two configs above that are left at their default.",
    ),
    ConfigKey(
        "message.format.version",
        "STRING",
        "3.0-IV1",
        _metadata_version,
        "Deprecated and ignored: record format v2 is always written, as in Kafka 3.x.",
    ),
    ConfigKey(
        "message.downconversion.enable",
        "BOOLEAN",
        "true",
        _boolean,
        "No effect: down-conversion serves Fetch v3 and older, which brokerd does not speak.",
    ),
    ConfigKey(
        "preallocate",
        "BOOLEAN",
        "false",
        _boolean,
        "No effect: segments are always sized up front, as their memory-mapped files need.",
    ),
    ConfigKey(
        "file.delete.delay.ms",
        "LONG",
        "60000",
        _integer(0, INT64_MAX),
        "No effect: deleted segments are removed at once, since no other process reads them.",
    ),
    ConfigKey(
        "leader.replication.throttled.replicas",
        "LIST",
        "",
        _throttled_replicas,
        "No effect: brokerd does not throttle replication between brokers on one machine.",
    ),
    ConfigKey(
        "follower.replication.throttled.replicas",
        "LIST",
        "",
        _throttled_replicas,
        "No effect: brokerd does not throttle replication between brokers on one machine.",
    ),
    ConfigKey(
        "remote.storage.enable",
        "BOOLEAN",
        "false",
        _remote_storage_enable,
        "Tiered storage; true is refused, as by a Kafka broker with it disabled.",
    ),
    ConfigKey(
        "local.retention.ms",
        "LONG",
        "-2",
        _integer(-2, INT64_MAX),
        "No effect without tiered storage: retention.ms alone governs the log.",
    ),
    ConfigKey(
        "local.retention.bytes",
        "LONG",
        "-2",
        _integer(-2, INT64_MAX),
        "No effect without tiered storage: retention.bytes alone governs the log.",
    ),
    ConfigKey("remote.log.copy.disable", "BOOLEAN", "false", _boolean, "No effect without tiered storage."),
    ConfigKey(
        "remote.log.delete.on.disable", "BOOLEAN", "false", _boolean, "No effect without tiered storage."
    ),
)
KEYS_BY_NAME = {key.name: key for key in CONFIG_KEYS}


def _invalid_configuration(message: str) -> Exception:
    """kafka-python's INVALID_CONFIG error, imported only when a value is refused: kctl reads
    this table for every command that shows topics, and kafka-python costs 0.2 s to import."""
    from kafka.errors import InvalidConfigurationError

    error: Exception = InvalidConfigurationError(message)
    return error


def _parse(key: ConfigKey, text: str | None) -> object:
    if text is None:  # CreateTopics allows null values on the wire; Kafka refuses them
        raise _invalid_configuration(f"Null value not supported for configuration {key.name}")
    try:
        return key.parse(text)
    except NotANumber:
        reason = f"Not a number of type {key.config_type}"
    except ValueError as error:
        reason = str(error)
    raise _invalid_configuration(f"Invalid value {text} for configuration {key.name}: {reason}")


@dataclass(frozen=True)
class LogConfig:
    """Typed view of a topic's configs; build it with ``from_configs``."""

    segment_bytes: int
    segment_ms: int
    segment_index_bytes: int
    index_interval_bytes: int
    retention_ms: int
    retention_bytes: int
    max_message_bytes: int
    message_timestamp_type: str
    min_insync_replicas: int
    flush_messages: int
    flush_ms: int
    cleanup_policy: tuple[str, ...]
    delete_retention_ms: int
    min_cleanable_dirty_ratio: float
    unclean_leader_election_enable: bool
    compression_type: str
    compression_gzip_level: int
    compression_lz4_level: int
    compression_zstd_level: int
    segment_jitter_ms: int
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    message_timestamp_difference_max_ms: int
    message_format_version: str
    message_downconversion_enable: bool
    preallocate: bool
    file_delete_delay_ms: int
    leader_replication_throttled_replicas: str
    follower_replication_throttled_replicas: str
    remote_storage_enable: bool
    local_retention_ms: int
    local_retention_bytes: int
    remote_log_copy_disable: bool
    remote_log_delete_on_disable: bool
    overrides: Mapping[str, str] = field(default_factory=dict)

    DEFAULTS: ClassVar[Mapping[str, str]] = {key.name: key.default for key in CONFIG_KEYS}

    @classmethod
    def from_configs(cls, configs: Mapping[str, str]) -> LogConfig:
        """Validate explicit topic configs; unknown names and bad values raise InvalidConfigurationError."""
        unknown = sorted(set(configs) - KEYS_BY_NAME.keys())
        if unknown:
            raise _invalid_configuration(f"Unknown topic config name: {', '.join(unknown)}")
        # each key's parser returns the type of its attribute, which a dict cannot express
        values: dict[str, Any] = {
            key.attribute: _parse(key, configs.get(key.name, key.default)) for key in CONFIG_KEYS
        }
        return cls(**values, overrides=dict(configs))

    @classmethod
    def for_topic(cls, topic_configs: Mapping[str, str], broker_defaults: Mapping[str, str]) -> LogConfig:
        """What a topic's logs use: its own configs over the broker-level defaults (by topic
        config name, e.g. retention.ms from log.retention.ms), as Kafka's
        LogConfig.fromProps(brokerDefaults, topicOverrides)."""
        return cls.from_configs({**broker_defaults, **topic_configs})

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def compression_level(self) -> int | None:
        """compression.<codec>.level for the topic's compression.type (None without one)."""
        return {
            "gzip": self.compression_gzip_level,
            "lz4": self.compression_lz4_level,
            "zstd": self.compression_zstd_level,
        }.get(self.compression_type)

    @property
    def max_segment_ms(self) -> int:
        """segment.ms, or max.compaction.lag.ms on a compacted topic when that is shorter: the
        active segment is never cleaned, so it must close in time (Kafka's maxSegmentMs)."""
        if "compact" in self.cleanup_policy:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    def random_segment_jitter(self) -> int:
        """How much sooner than ``max_segment_ms`` a new segment rolls, drawn below
        segment.jitter.ms so that partitions created together do not all roll together."""
        bound = min(self.segment_jitter_ms, self.max_segment_ms)
        return random.randrange(bound) if bound else 0

    @property
    def timestamp_before_max_ms(self) -> int:
        """message.timestamp.before.max.ms, or the deprecated difference.max.ms while it is left
        at its default, as Kafka 3.9 does in the transition."""
        return _unless_default(self.message_timestamp_before_max_ms, self.message_timestamp_difference_max_ms)

    @property
    def timestamp_after_max_ms(self) -> int:
        """message.timestamp.after.max.ms, or the deprecated difference.max.ms likewise."""
        return _unless_default(self.message_timestamp_after_max_ms, self.message_timestamp_difference_max_ms)


def _unless_default(value: int, fallback: int) -> int:
    return fallback if value == INT64_MAX else value

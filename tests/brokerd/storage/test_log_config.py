import pytest
from kafka.errors import InvalidConfigurationError

from brokerd.storage.log_config import LogConfig

pytestmark = pytest.mark.unit


def test_defaults_are_kafkas():
    config = LogConfig.from_configs({})
    assert config.segment_bytes == 1 << 30
    assert config.segment_ms == config.retention_ms == 7 * 24 * 3600 * 1000
    assert (config.segment_index_bytes, config.index_interval_bytes) == (10 << 20, 4096)
    assert (config.retention_bytes, config.max_message_bytes) == (-1, 1048588)
    assert config.message_timestamp_type == "CreateTime" and not config.log_append_time
    assert config.flush_messages == config.flush_ms == 2**63 - 1
    assert config.cleanup_policy == ("delete",) and config.min_insync_replicas == 1
    assert config.unclean_leader_election_enable is False


def test_explicit_values_are_parsed():
    config = LogConfig.from_configs(
        {
            "retention.ms": "-1",
            "message.timestamp.type": "LogAppendTime",
            "cleanup.policy": "compact,delete",
            "unclean.leader.election.enable": "TRUE",
            "segment.bytes": " 1024 ",
        }
    )
    assert config.retention_ms == -1 and config.log_append_time
    assert config.cleanup_policy == ("compact", "delete")
    assert config.unclean_leader_election_enable is True and config.segment_bytes == 1024


def test_unknown_names_are_rejected_by_name():
    with pytest.raises(InvalidConfigurationError, match="retention.msec"):
        LogConfig.from_configs({"retention.msec": "1"})


@pytest.mark.parametrize(
    "name, value",
    [
        ("segment.bytes", "13"),
        ("segment.bytes", "lots"),
        ("segment.bytes", str(2**31)),
        ("retention.ms", "-2"),
        ("message.timestamp.type", "createtime"),
        ("cleanup.policy", "purge"),
        ("min.insync.replicas", "0"),
        ("flush.messages", "0"),
        ("unclean.leader.election.enable", "yes"),
        ("message.format.version", "latest"),
        ("leader.replication.throttled.replicas", "0"),
        ("compression.gzip.level", "0"),
        ("compression.lz4.level", "18"),
        ("compression.zstd.level", "23"),
        ("max.compaction.lag.ms", "0"),
        ("local.retention.ms", "-3"),
        ("segment.jitter.ms", "-1"),
    ],
)
def test_bad_values_are_rejected_naming_the_key(name, value):
    with pytest.raises(InvalidConfigurationError, match=name.replace(".", r"\.")):
        LogConfig.from_configs({name: value})


def test_null_values_are_rejected_naming_the_key():
    with pytest.raises(InvalidConfigurationError, match="retention.ms"):
        LogConfig.from_configs({"retention.ms": None})


def test_kafka_39_configs_have_kafkas_defaults():
    config = LogConfig.from_configs({})
    assert (config.compression_gzip_level, config.compression_lz4_level, config.compression_zstd_level) == (
        -1,
        9,
        3,
    )
    assert (config.segment_jitter_ms, config.min_compaction_lag_ms, config.max_compaction_lag_ms) == (
        0,
        0,
        2**63 - 1,
    )
    assert config.message_timestamp_before_max_ms == config.message_timestamp_after_max_ms == 2**63 - 1
    assert config.message_format_version == "3.0-IV1" and config.message_downconversion_enable
    assert (config.local_retention_ms, config.local_retention_bytes, config.file_delete_delay_ms) == (
        -2,
        -2,
        60000,
    )
    assert (
        config.leader_replication_throttled_replicas == config.follower_replication_throttled_replicas == ""
    )


@pytest.mark.parametrize(
    "name, value",
    [
        ("message.format.version", "2.8"),
        ("message.format.version", "0.10.2-IV0"),
        ("message.format.version", "0.10.0.0"),
        ("leader.replication.throttled.replicas", "*"),
        ("follower.replication.throttled.replicas", "0:1, 1:2"),
        ("compression.gzip.level", "9"),
        ("compression.zstd.level", "-5"),
        ("remote.storage.enable", "false"),
    ],
)
def test_accepted_values(name, value):
    assert LogConfig.from_configs({name: value}).overrides == {name: value}


def test_remote_storage_is_refused_as_by_a_broker_without_tiered_storage():
    with pytest.raises(
        InvalidConfigurationError, match="Tiered Storage functionality is disabled in the broker"
    ):
        LogConfig.from_configs({"remote.storage.enable": "true"})

import pytest
from kafka.errors import InvalidConfigurationError

from brokerd.storage import LogConfig


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
    config = LogConfig.from_configs({
        "retention.ms": "-1", "message.timestamp.type": "LogAppendTime", "cleanup.policy": "compact,delete",
        "unclean.leader.election.enable": "TRUE", "segment.bytes": " 1024 ",
    })
    assert config.retention_ms == -1 and config.log_append_time
    assert config.cleanup_policy == ("compact", "delete")
    assert config.unclean_leader_election_enable is True and config.segment_bytes == 1024


def test_unknown_names_are_rejected_by_name():
    with pytest.raises(InvalidConfigurationError, match="retention.msec"):
        LogConfig.from_configs({"retention.msec": "1"})


@pytest.mark.parametrize("name, value", [
    ("segment.bytes", "13"), ("segment.bytes", "lots"), ("segment.bytes", str(2**31)),
    ("retention.ms", "-2"), ("message.timestamp.type", "createtime"), ("cleanup.policy", "purge"),
    ("min.insync.replicas", "0"), ("flush.messages", "0"), ("unclean.leader.election.enable", "yes"),
])
def test_bad_values_are_rejected_naming_the_key(name, value):
    with pytest.raises(InvalidConfigurationError, match=name.replace(".", r"\.")):
        LogConfig.from_configs({name: value})


def test_null_values_are_rejected_naming_the_key():
    with pytest.raises(InvalidConfigurationError, match="retention.ms"):
        LogConfig.from_configs({"retention.ms": None})


def test_merged_sets_and_resets_keys():
    config = LogConfig.from_configs({"retention.ms": "1000", "segment.bytes": "2048"})
    altered = config.merged({"retention.ms": None, "max.message.bytes": "100"})
    assert altered.overrides == {"segment.bytes": "2048", "max.message.bytes": "100"}
    assert altered.retention_ms == 7 * 24 * 3600 * 1000 and altered.max_message_bytes == 100
    with pytest.raises(InvalidConfigurationError):
        config.merged({"segment.bytes": "-5"})


def test_describe_lists_every_key_with_its_source():
    rows = {name: (value, is_default) for name, value, is_default in LogConfig.describe({"retention.ms": "5"})}
    assert rows["retention.ms"] == ("5", False)
    assert rows["segment.bytes"] == ("1073741824", True)
    assert rows.keys() == LogConfig.DEFAULTS.keys()

"""Group configs: a group's own value wins over the broker's default, and Kafka's bounds
(the broker's group.consumer.min/max.* and group.share.min/max.*) are enforced on change."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokerd.config import BrokerConfig
from brokerd.group_configs import GroupConfigs, InvalidGroupConfig

pytestmark = pytest.mark.unit


class Source:
    def __init__(self) -> None:
        self.configs: dict[str, dict[str, str]] = {}

    def group_configs(self, group_id: str) -> dict[str, str]:
        return self.configs.get(group_id, {})


def configs(**overrides: str) -> tuple[GroupConfigs, Source]:
    source = Source()
    broker = BrokerConfig(
        0, Path("unused"), 9092, overrides={k.replace("_", "."): v for k, v in overrides.items()}
    )
    return GroupConfigs(broker, source), source


def test_a_groups_own_value_wins_over_the_brokers_default() -> None:
    group_configs, source = configs(group_consumer_session_timeout_ms="50000")
    assert group_configs.consumer_session_timeout_ms("g") == 50000
    assert group_configs.consumer_heartbeat_interval_ms("g") == 5000
    assert group_configs.share_auto_offset_reset("g") == "latest"
    assert group_configs.share_record_lock_duration_ms("g") == 30000
    source.configs["g"] = {"consumer.session.timeout.ms": "55000", "share.auto.offset.reset": "earliest"}
    assert group_configs.consumer_session_timeout_ms("g") == 55000
    assert group_configs.share_auto_offset_reset("g") == "earliest"
    assert group_configs.consumer_session_timeout_ms("other") == 50000


def test_values_outside_the_brokers_bounds_are_refused_with_kafkas_message() -> None:
    group_configs, _ = configs()
    with pytest.raises(InvalidGroupConfig, match="consumer.session.timeout.ms must be greater than or equal"):
        group_configs.validate({"consumer.session.timeout.ms": "10000"})
    with pytest.raises(
        InvalidGroupConfig, match="less than or equal to group.share.max.delivery.count.limit"
    ):
        group_configs.validate({"share.delivery.count.limit": "11"})
    with pytest.raises(InvalidGroupConfig, match="Unknown group config name"):
        group_configs.validate({"consumer.bogus": "1"})
    with pytest.raises(InvalidGroupConfig, match="Not a number"):
        group_configs.validate({"share.session.timeout.ms": "soon"})
    with pytest.raises(InvalidGroupConfig, match="String must be one of"):
        group_configs.validate({"share.isolation.level": "dirty"})
    group_configs.validate(
        {"consumer.session.timeout.ms": "60000", "share.isolation.level": "read_committed"}
    )


def test_lowered_broker_bounds_allow_short_sessions_but_not_below_the_heartbeat() -> None:
    group_configs, _ = configs(group_consumer_min_session_timeout_ms="6000")
    group_configs.validate({"consumer.session.timeout.ms": "6000"})
    with pytest.raises(InvalidGroupConfig, match="consumer.heartbeat.interval.ms must be less than"):
        group_configs.validate(
            {"consumer.session.timeout.ms": "6000", "consumer.heartbeat.interval.ms": "6000"}
        )

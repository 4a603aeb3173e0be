"""Group configs (Kafka's GroupConfig, KIP-848 and KIP-932): per-group overrides of the
broker's group.consumer.* and group.share.* settings, set with IncrementalAlterConfigs on a
GROUP resource and kept in the metadata log beside topic configs.

``GroupConfigs`` answers the value in effect for a group (its own, else the broker's) typed,
so the consumer and share group coordinators never parse strings; ``validate`` applies
Kafka's rules to a group's configs before they are stored: every value parses and lies within
the broker's min/max bounds for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from brokerd.config import BrokerConfig
from brokerd.ports import GroupConfigSource

CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT_MS = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"

SHARE_AUTO_OFFSET_RESET_CHOICES = ("latest", "earliest")  # Kafka also takes by_duration:<ISO-8601>
SHARE_ISOLATION_LEVEL_CHOICES = ("read_uncommitted", "read_committed")


@dataclass(frozen=True)
class _Bounded:
    """An integer group config whose default and bounds are broker configs."""

    default: str  # the broker config giving the default
    minimum: str  # ... and its lower and upper bounds
    maximum: str


@dataclass(frozen=True)
class _Choice:
    """A string group config with fixed choices and a fixed default."""

    default: str
    choices: tuple[str, ...]


_SPEC: dict[str, _Bounded | _Choice] = {
    CONSUMER_SESSION_TIMEOUT_MS: _Bounded(
        "group.consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
    ),
    CONSUMER_HEARTBEAT_INTERVAL_MS: _Bounded(
        "group.consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    SHARE_SESSION_TIMEOUT_MS: _Bounded(
        "group.share.session.timeout.ms",
        "group.share.min.session.timeout.ms",
        "group.share.max.session.timeout.ms",
    ),
    SHARE_HEARTBEAT_INTERVAL_MS: _Bounded(
        "group.share.heartbeat.interval.ms",
        "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
    ),
    SHARE_RECORD_LOCK_DURATION_MS: _Bounded(
        "group.share.record.lock.duration.ms",
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
    SHARE_DELIVERY_COUNT_LIMIT: _Bounded(
        "group.share.delivery.count.limit",
        "group.share.min.delivery.count.limit",
        "group.share.max.delivery.count.limit",
    ),
    SHARE_AUTO_OFFSET_RESET: _Choice("latest", SHARE_AUTO_OFFSET_RESET_CHOICES),
    SHARE_ISOLATION_LEVEL: _Choice("read_uncommitted", SHARE_ISOLATION_LEVEL_CHOICES),
}

GROUP_CONFIG_NAMES: tuple[str, ...] = tuple(sorted(_SPEC))

# (interval, timeout): Kafka requires the heartbeat interval below the session timeout.
_INTERVAL_BELOW_TIMEOUT = (
    (CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS),
    (SHARE_HEARTBEAT_INTERVAL_MS, SHARE_SESSION_TIMEOUT_MS),
)


class InvalidGroupConfig(ValueError):
    """A group config that cannot be set; answered as INVALID_CONFIG with this message."""


class GroupConfigs:
    """The group configs in effect: a group's own value, else the broker's default.

    ``broker_config`` is read on every call, so a dynamic change of the broker's defaults or bounds
    applies at once, as in Kafka."""

    def __init__(self, broker_config: BrokerConfig, source: GroupConfigSource) -> None:
        self.broker_config = broker_config
        self.source = source

    def own(self, group_id: str) -> Mapping[str, str]:
        """The configs set on the group itself."""
        return self.source.group_configs(group_id)

    def value(self, group_id: str, name: str) -> str:
        """The value in effect, as a string (for DescribeConfigs)."""
        own = self.own(group_id).get(name)
        return own if own is not None else self.default(name)

    def default(self, name: str) -> str:
        spec = _SPEC[name]
        if isinstance(spec, _Choice):
            return spec.default
        return str(self.broker_config.get(spec.default))

    def _int(self, group_id: str, name: str) -> int:
        return int(self.value(group_id, name))

    # -- typed accessors, one per config --------------------------------------------------
    def consumer_session_timeout_ms(self, group_id: str) -> int:
        return self._int(group_id, CONSUMER_SESSION_TIMEOUT_MS)

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        return self._int(group_id, CONSUMER_HEARTBEAT_INTERVAL_MS)

    def share_session_timeout_ms(self, group_id: str) -> int:
        return self._int(group_id, SHARE_SESSION_TIMEOUT_MS)

    def share_heartbeat_interval_ms(self, group_id: str) -> int:
        return self._int(group_id, SHARE_HEARTBEAT_INTERVAL_MS)

    def share_record_lock_duration_ms(self, group_id: str) -> int:
        return self._int(group_id, SHARE_RECORD_LOCK_DURATION_MS)

    def share_delivery_count_limit(self, group_id: str) -> int:
        return self._int(group_id, SHARE_DELIVERY_COUNT_LIMIT)

    def share_auto_offset_reset(self, group_id: str) -> str:
        return self.value(group_id, SHARE_AUTO_OFFSET_RESET)

    def share_isolation_level(self, group_id: str) -> str:
        return self.value(group_id, SHARE_ISOLATION_LEVEL)

    # -- validation --------------------------------------------------------------------------
    def validate(self, configs: Mapping[str, str]) -> None:
        """Kafka's GroupConfig.validate for a group's configs after a change; raises
        InvalidGroupConfig naming the first rule broken."""
        for name, text in configs.items():
            spec = _SPEC.get(name)
            if spec is None:
                raise InvalidGroupConfig(f"Unknown group config name: {name}")
            if isinstance(spec, _Choice):
                if text not in spec.choices:
                    raise InvalidGroupConfig(
                        f"Invalid value {text} for configuration {name}: String must be one of: "
                        + ", ".join(spec.choices)
                    )
                continue
            value = _parse_int(name, text)
            low, high = self.broker_config.get(spec.minimum), self.broker_config.get(spec.maximum)
            if value < low:
                raise InvalidGroupConfig(f"{name} must be greater than or equal to {spec.minimum}")
            if value > high:
                raise InvalidGroupConfig(f"{name} must be less than or equal to {spec.maximum}")

        def effective(name: str) -> int:
            return _parse_int(name, configs[name]) if name in configs else int(self.default(name))

        for interval, timeout in _INTERVAL_BELOW_TIMEOUT:
            if (interval in configs or timeout in configs) and effective(interval) >= effective(timeout):
                raise InvalidGroupConfig(f"{interval} must be less than {timeout}")


def _parse_int(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidGroupConfig(
            f"Invalid value {text} for configuration {name}: Not a number of type INT"
        ) from None

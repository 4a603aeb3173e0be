"""A share group's settings as its share partitions use them: the group's own configs
(brokerd/group_configs.py), else the broker's group.share.* defaults, and for
share.auto.offset.reset the broker's default of that name (latest unless set)."""

from __future__ import annotations

from brokerd.config import BrokerConfig
from brokerd.group_configs import SHARE_AUTO_OFFSET_RESET, GroupConfigs


class ShareSettings:
    def __init__(self, group_configs: GroupConfigs, broker_config: BrokerConfig) -> None:
        self._group_configs = group_configs
        self._broker_config = broker_config

    def share_record_lock_duration_ms(self, group_id: str) -> int:
        return self._group_configs.share_record_lock_duration_ms(group_id)

    def share_delivery_count_limit(self, group_id: str) -> int:
        return self._group_configs.share_delivery_count_limit(group_id)

    def share_auto_offset_reset(self, group_id: str) -> str:
        own = self._group_configs.own(group_id).get(SHARE_AUTO_OFFSET_RESET)
        return own if own is not None else str(self._broker_config.get("share.auto.offset.reset"))

    def share_isolation_level(self, group_id: str) -> str:
        return self._group_configs.share_isolation_level(group_id)

    def max_record_locks(self) -> int:
        return int(self._broker_config.get("group.share.partition.max.record.locks"))

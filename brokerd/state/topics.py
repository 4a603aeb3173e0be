"""Topics and configs as metadata records: a controller's decisions on topics (creation,
growth, deletion, reassignment), topic config changes, dynamic broker configs and group
configs.

Each is a read-modify-write of the metadata image under the write lock whose records are the
differences: a change that changes nothing appends nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from brokerd.metadata import records as metadata_records
from brokerd.metadata.editor import TopicsEditor, config_records
from brokerd.state.metadata_store import MetadataStore


def broker_entity(broker_id: int | None) -> str:
    """How the metadata names a broker's dynamic configs: its id, or <default> (as in ZooKeeper)."""
    return "<default>" if broker_id is None else str(broker_id)


class TopicsAndConfigs(MetadataStore):
    @contextmanager
    def update_topics(self, controller_epoch: int) -> Iterator[TopicsEditor]:
        """A controller decision on the topics, under the write lock, fenced by controller epoch.

        The caller changes the yielded topics (copies of what it touches); on exit the records
        of the changes are appended to the metadata log. A writer whose controller epoch is
        below the current one raises StaleControllerEpoch and changes nothing, so a
        paused-then-resumed (zombie) controller cannot undo decisions.
        """
        with self._editing(controller_epoch) as topics:
            yield topics

    @contextmanager
    def update_topic_configs(self) -> Iterator[TopicsEditor]:
        """Topic config changes under the write lock, as ConfigRecords of what changed (none
        when nothing did). They are not controller decisions (as in Kafka's ZooKeeper mode,
        any broker writes them), so they are not fenced. A validate-only request needs no
        lock: it reads ``topics()``."""
        with self._editing(None) as topics:
            yield topics

    def dynamic_broker_configs(self, broker_id: int | None) -> dict[str, str]:
        """The dynamic configs of broker ``broker_id``, or with None the cluster-wide defaults
        (Kafka's /config/brokers/<id> and /config/brokers/<default>)."""
        return dict(self.metadata_image().broker_configs.get(broker_entity(broker_id), {}))

    @contextmanager
    def update_dynamic_broker_configs(self, broker_id: int | None) -> Iterator[dict[str, str]]:
        """Read-modify-write one broker's (or, with None, the cluster-wide) dynamic configs under
        the write lock, as ConfigRecords in the metadata log (only what changed)."""
        entity = broker_entity(broker_id)
        with self._writing(None) as log:
            before = dict(log.image.broker_configs.get(entity, {}))
            configs = dict(before)
            yield configs
            log.append(config_records(metadata_records.BROKER_RESOURCE, entity, before, configs), None)

    def group_configs(self, group_id: str) -> dict[str, str]:
        """The configs set on group ``group_id`` (Kafka's GROUP config resource, KIP-848)."""
        return dict(self.metadata_image().group_configs.get(group_id, {}))

    @contextmanager
    def update_group_configs(self, group_id: str) -> Iterator[dict[str, str]]:
        """Read-modify-write one group's configs under the write lock, as ConfigRecords in
        the metadata log (only what changed)."""
        with self._writing(None) as log:
            before = dict(log.image.group_configs.get(group_id, {}))
            configs = dict(before)
            yield configs
            log.append(config_records(metadata_records.GROUP_RESOURCE, group_id, before, configs), None)

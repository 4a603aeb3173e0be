"""Topics created because a client asked for them by name (Kafka's AutoTopicCreationManager):
a Metadata request with auto.create.topics.enable, and the internal topics a coordinator
needs (__consumer_offsets, __transaction_state, __share_group_state) on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kafka.errors import NotControllerError, TopicAlreadyExistsError

from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
from brokerd.coordinator.transaction_log import TRANSACTION_STATE_TOPIC
from brokerd.share.share_state import SHARE_STATE_TOPIC

if TYPE_CHECKING:
    from brokerd.config import BrokerConfig
    from brokerd.controller import Controller
    from brokerd.metadata.image import TopicImage
    from brokerd.ports.services import MetadataCache

SEGMENT_BYTES = str(100 * 1024 * 1024)  # the internal topics' segment.bytes, as Kafka's


class TopicCreationRequests(Protocol):
    """Where a broker that is not the controller leaves a topic for the controller to
    create (the state directory's topic requests)."""

    def request_topic_creation(self, name: str) -> None: ...


class AutoTopicCreationManager:
    """Creates a topic asked for by name on the controller; elsewhere leaves a request."""

    def __init__(
        self,
        config: BrokerConfig,
        controller: Controller,
        requests: TopicCreationRequests,
        metadata: MetadataCache,
    ) -> None:
        self._config = config
        self._controller = controller
        self._requests = requests
        self._metadata = metadata

    def create_topic(self, name: str) -> TopicImage | None:
        """Create a topic a client asked for by name (auto.create.topics.enable).

        Only the controller creates topics; another broker leaves a request for it, and so
        does a controller that finds another has taken over: the client is answered as while
        the topic is being created (LEADER_NOT_AVAILABLE, COORDINATOR_NOT_AVAILABLE) and asks again.
        """
        if not self._controller.is_active:
            self._requests.request_topic_creation(name)
            return None
        live = self._metadata.refresh_registrations()
        partitions, replication, configs = auto_create_settings(self._config, name, len(live))
        try:
            self._controller.create_topic(name, partitions, replication, configs, live)
        except TopicAlreadyExistsError:
            pass  # created a moment ago by another request; our cache had not caught up yet
        except NotControllerError:
            self._requests.request_topic_creation(name)
            return None
        self._metadata.apply_metadata_delta()
        return self._metadata.topics.get(name)


def auto_create_settings(config: BrokerConfig, name: str, live: int) -> tuple[int, int, dict[str, str]]:
    """Partitions, replication factor (at most the live brokers) and configs of an
    auto-created topic. The internal topics are compacted; writes to __transaction_state
    and __share_group_state need their min.isr replicas, at most all."""
    if name == OFFSETS_TOPIC:
        return (
            config.get("offsets.topic.num.partitions"),
            min(config.get("offsets.topic.replication.factor"), live),
            {"cleanup.policy": "compact", "segment.bytes": SEGMENT_BYTES},
        )
    if name == SHARE_STATE_TOPIC:
        return _replicated_state_topic(config, "share.coordinator.state.topic", live)
    if name == TRANSACTION_STATE_TOPIC:
        return _replicated_state_topic(config, "transaction.state.log", live)
    return (
        config.get("num.partitions"),
        min(config.get("default.replication.factor"), live),
        {},
    )


def _replicated_state_topic(config: BrokerConfig, prefix: str, live: int) -> tuple[int, int, dict[str, str]]:
    """A coordinator's state topic, from its ``<prefix>.num.partitions``,
    ``.replication.factor`` and ``.min.isr``: compacted, and never led by an out-of-sync
    replica."""
    replication = min(config.get(f"{prefix}.replication.factor"), live)
    min_isr = min(config.get(f"{prefix}.min.isr"), replication)
    return (
        config.get(f"{prefix}.num.partitions"),
        replication,
        {
            "cleanup.policy": "compact",
            "segment.bytes": SEGMENT_BYTES,
            "min.insync.replicas": str(min_isr),
            "unclean.leader.election.enable": "false",
        },
    )

"""A broker: state directory registration, controller candidacy, hosted replicas, the listener."""

from __future__ import annotations

import asyncio
import logging
import time

from brokerd.api import build_handlers
from brokerd.config import BrokerConfig
from brokerd.controller import Controller
from brokerd.producer_ids import ProducerIdManager
from brokerd.replica_manager import ReplicaManager
from brokerd.server import KafkaServer
from brokerd.state import BrokerRegistration, ClusterState, TopicRecord

log = logging.getLogger(__name__)

METADATA_POLL_S = 0.1
STATUS_PUBLISH_S = 0.5


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self.state = ClusterState(config.cluster_dir)
        if not self.state.exists():
            raise RuntimeError(f"{config.cluster_dir} holds no cluster state (run kctl cluster up)")
        self.cluster_id = self.state.cluster_id()
        self.controller = Controller(self.broker_id, self.state)
        self.replicas = ReplicaManager(self.broker_id,
                                       self.state.broker_dir(self.broker_id) / "data")
        self.producer_ids = ProducerIdManager(self.state)
        self.topics: dict[str, TopicRecord] = {}
        self.live_brokers: list[BrokerRegistration] = []
        self.server = KafkaServer(build_handlers(self), config.host, config.port,
                                  config.get("socket.request.max.bytes"))
        self._liveness = None
        self._metadata_version = None
        self._tasks: list[asyncio.Task] = []

    async def start(self) -> None:
        await self.server.start()  # fails fast on a port in use, before registering
        self._liveness = self.state.register_broker(self.broker_id, self.config.host,
                                                    self.config.port)
        self.controller.try_elect()
        self.refresh_metadata()
        self.replicas.delete_stray_logs()
        self._tasks = [asyncio.create_task(self._every(METADATA_POLL_S, self._tick)),
                       asyncio.create_task(self._every(STATUS_PUBLISH_S, self._publish_status)),
                       asyncio.create_task(self._every(
                           self.config.get("log.retention.check.interval.ms") / 1000,
                           self._enforce_retention)),
                       asyncio.create_task(self._every(
                           self.config.get("log.flush.scheduler.interval.ms") / 1000,
                           self._flush_due))]
        log.info("broker %d serving on %s:%d", self.broker_id, self.config.host, self.config.port)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.server.stop()
        self.replicas.close()
        self._publish_status()
        self.controller.resign()
        if self._liveness is not None:
            self._liveness.release()
        log.info("broker %d stopped", self.broker_id)

    async def _every(self, interval_s: float, action) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                action()
            except Exception:
                log.exception("periodic %s failed", action.__name__)

    def _tick(self) -> None:
        self.controller.try_elect()
        self.refresh_metadata()

    def refresh_metadata(self) -> None:
        """Reload topics when metadata.json changed; live brokers every time (they come and go)."""
        self.live_brokers = [b for b in self.state.brokers() if b.alive]
        version = self.state.metadata_version()
        if version != self._metadata_version:
            self._metadata_version = version
            self.topics = self.state.topics()
            self.replicas.apply_metadata(self.topics)

    def _publish_status(self) -> None:
        self.state.publish_replica_status(self.broker_id, self.replicas.status())

    def _enforce_retention(self) -> None:
        self.replicas.enforce_retention(int(time.time() * 1000))

    def _flush_due(self) -> None:
        self.replicas.flush_due(int(time.time() * 1000))

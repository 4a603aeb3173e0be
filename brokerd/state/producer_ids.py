"""Producer id blocks, `producer_ids.json`: the next free producer id of the cluster. Brokers
reserve ids a block at a time (Kafka's ProducerIdManager asks the controller for blocks), so
ids are unique across brokers and restarts for one lock per block."""

from __future__ import annotations

from brokerd.state.directory import StateDirectory

PRODUCER_IDS = "producer_ids.json"


class ProducerIdBlocks(StateDirectory):
    def allocate_producer_ids(self, count: int) -> int:
        """Reserve ``count`` producer ids, unique across brokers and restarts; returns the first."""
        with self.updating(PRODUCER_IDS, {"next": 0}) as doc:
            first: int = doc["next"]
            doc["next"] = first + count
        return first

"""Replica status publishing, `replicas/<id>.json`: every replica a broker hosts at one moment
(log start, log end, high watermark, ISR, ...), what `kctl watch` and `kctl topic describe`
show, and `share_partitions/<id>.json`: the share partitions it leads (KIP-932 counts of
deliveries, releases, rejections and lock expiries, and what is in flight). Each broker
writes only its own files, at its own moment, so views never mix numbers from different
instants of one broker, and no lock is needed."""

from __future__ import annotations

from brokerd.atomic_file import atomic_write
from brokerd.state.directory import JsonObject, StateDirectory, read_json


class ReplicaStatusFiles(StateDirectory):
    def publish_replica_status(self, broker_id: int, document: bytes) -> None:
        """Replace the broker's own file; ``document`` maps "topic:partition" to that
        replica's status (JSON, encoded by the broker, which re-encodes only what changed)."""
        atomic_write(self.dir / "replicas" / f"{broker_id}.json", document)

    def replica_status(self) -> dict[int, dict[tuple[str, int], JsonObject]]:
        """broker id -> (topic, partition) -> the status that broker last published."""
        out = {}
        for path in (self.dir / "replicas").glob("*.json"):
            entries = {}
            for key, status in read_json(path, {}).items():
                topic, _, part = key.rpartition(":")
                entries[(topic, int(part))] = status
            out[int(path.stem)] = entries
        return out

    def publish_share_status(self, broker_id: int, document: bytes) -> None:
        """Replace the broker's own share partition file; ``document`` is a JSON list, one
        object per share partition it leads (group, topic, partition, leader epoch, counters)."""
        directory = self.dir / "share_partitions"
        directory.mkdir(exist_ok=True)
        atomic_write(directory / f"{broker_id}.json", document)

    def share_status(self) -> dict[int, list[JsonObject]]:
        """broker id -> the share partitions that broker last published as their leader."""
        return {
            int(path.stem): read_json(path, []) for path in (self.dir / "share_partitions").glob("*.json")
        }

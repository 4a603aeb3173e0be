"""What ShareFetch and ShareAcknowledge share (KIP-932): their share session, topic ids,
the acknowledgements of each partition (applied, and persisted, before the response), and
the response's partition entries. Both need READ on the group and on each topic."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import InvalidRequestError, KafkaError, UnknownTopicIdError

from brokerd.api.authorization import Permission, allows
from brokerd.api.errors import error_code, error_message
from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices
from brokerd.share.share_partition import Acknowledgement
from brokerd.share.share_sessions import FINAL_EPOCH, ShareSession

MAX_ACK_BATCHES = 10_000  # per partition and request
ACK_TIMEOUT_S = 30.0

PartitionKey = tuple[uuid.UUID, int]


@dataclass
class ShareRequest:
    """One ShareFetch or ShareAcknowledge as its handler works through it."""

    services: BrokerServices
    request: Request
    names: dict[uuid.UUID, str]
    readable: Permission
    partitions: dict[PartitionKey, dict] = field(default_factory=dict)  # response entries

    @classmethod
    def of(cls, services: BrokerServices, request: Request) -> ShareRequest:
        names = {uuid.UUID(hex=t.topic_id): name for name, t in services.metadata.topics.items()}
        readable = Permission(services.security.authorizer, request.session, ACLOperation.READ)
        return cls(services, request, names, readable)

    def group_allowed(self) -> bool:
        return allows(
            self.services.security.authorizer,
            self.request.session,
            ACLOperation.READ,
            ResourceType.GROUP,
            self.request.body.group_id,
        )

    def topic(self, topic_id: uuid.UUID) -> str:
        """The topic's name; UNKNOWN_TOPIC_ID, or TOPIC_AUTHORIZATION_FAILED without READ."""
        name = self.names.get(topic_id)
        if name is None:
            raise UnknownTopicIdError("This server does not host this topic ID.")
        refused = self.readable.refusal(name)
        if refused is not None:
            raise refused
        return name

    def entry(self, key: PartitionKey) -> dict:
        return self.partitions.setdefault(
            key, {"partition_index": key[1], "error_code": 0, "error_message": None}
        )

    def fail(self, key: PartitionKey, exc: Exception) -> None:
        entry = self.entry(key)
        entry["error_code"] = error_code(exc)
        entry["error_message"] = error_message(exc)

    async def acknowledge(self, topics: Iterable[Any]) -> None:
        """Apply every partition's acknowledgements, concurrently; each partition's outcome
        becomes its acknowledge error."""
        work = []
        for topic in topics:
            for p in topic.partitions:
                key = (topic.topic_id, p.partition_index)
                if not p.acknowledgement_batches:
                    continue
                work.append(self._acknowledge(key, p.acknowledgement_batches))
        if work:
            await asyncio.gather(*work)

    async def _acknowledge(self, key: PartitionKey, batches: Sequence[Any]) -> None:
        body = self.request.body
        try:
            name = self.topic(key[0])
            if len(batches) > MAX_ACK_BATCHES:
                raise InvalidRequestError(f"more than {MAX_ACK_BATCHES} acknowledgement batches")
            acks = [
                Acknowledgement(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in batches
            ]
            await self.services.share.partitions.acknowledge(
                body.group_id, body.member_id, name, key[0].hex, key[1], acks, ACK_TIMEOUT_S
            )
            error: Exception | None = None
        except (KafkaError, OSError, TimeoutError) as exc:
            error = exc
        entry = self.entry(key)
        entry["acknowledge_error_code"] = 0 if error is None else error_code(error)
        entry["acknowledge_error_message"] = None if error is None else error_message(error)

    def close_if_final(self, session: ShareSession) -> bool:
        """Epoch -1 ends the session: what the member still holds of its partitions is
        released at once. True when it did."""
        body = self.request.body
        if body.share_session_epoch != FINAL_EPOCH:
            return False
        self.services.share.sessions.close(body.group_id, body.member_id)
        by_name = {name: topic_id for topic_id, name in self.names.items()}
        held = [(name, by_name[name].hex, index) for name, index in session.partitions if name in by_name]
        self.services.share.partitions.release(body.group_id, body.member_id, held)
        return True

    def responses(self, extra_fields: dict) -> list[dict]:
        """The partition entries grouped by topic id, each with the fields its API has."""
        by_topic: dict[uuid.UUID, list[dict]] = {}
        for (topic_id, index), entry in sorted(
            self.partitions.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])
        ):
            full = {**extra_fields, **entry}
            if full["error_code"] != 0:
                full["current_leader"] = self._current_leader(topic_id, index)
            by_topic.setdefault(topic_id, []).append(full)
        return [{"topic_id": topic_id, "partitions": parts} for topic_id, parts in by_topic.items()]

    def _current_leader(self, topic_id: uuid.UUID, index: int) -> dict:
        name = self.names.get(topic_id)
        record = self.services.metadata.topics.get(name) if name is not None else None
        partition = record.partitions.get(index) if record is not None else None
        if partition is None:
            return {"leader_id": -1, "leader_epoch": -1}
        return {"leader_id": partition.leader, "leader_epoch": partition.leader_epoch}

    def node_endpoints(self) -> list[dict]:
        """Where the leaders of failed partitions are, on the listener the request came in
        on (Kafka answers them with NOT_LEADER_OR_FOLLOWER, so the client moves at once)."""
        leaders = {
            self._current_leader(topic_id, index)["leader_id"]
            for (topic_id, index), entry in self.partitions.items()
            if entry["error_code"] != 0
        }
        endpoints = []
        for reg in self.services.metadata.live_brokers:
            if reg.broker_id in leaders:
                host, port = reg.endpoint(self.request.session.listener)
                endpoints.append({"node_id": reg.broker_id, "host": host, "port": port, "rack": None})
        return endpoints


def top_level_error(exc: Exception) -> dict:
    return {"error_code": error_code(exc), "error_message": error_message(exc)}

"""API v3's consumer groups: GET /v3/clusters/{c}/consumer-groups[/{g}], and a group's lags:
…/{g}/lags (each partition it committed: committed offset, log end offset, lag, and the member
that owns the partition now) and …/{g}/lag-summary (the largest lag and the total). A lag is
the log end offset less the committed offset, as Confluent's proxy computes it, from the admin
client's list_consumer_group_offsets and list_offsets."""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import ConsumerGroupDescription, MemberDescription, OffsetSpec
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from restproxy import errors
from restproxy.clients import Credentials
from restproxy.cluster import ADMIN_TIMEOUT_S, result
from restproxy.errors import RestError
from restproxy.v3_common import V3, listing

T = TypeVar("T")


@dataclass(frozen=True)
class Lag:
    topic: str
    partition: int
    committed: int
    end: int
    owner: MemberDescription | None

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


def routes(app: FastAPI, v3: V3) -> None:
    groups = _Groups(v3)

    @app.get("/v3/clusters/{cluster_id}/consumer-groups", tags=["v3"])
    async def list_groups(cluster_id: str, request: Request) -> JSONResponse:
        credentials = await v3.checked(request, cluster_id)
        found = await groups.described(credentials, await groups.ids(credentials))
        data = [groups.group_json(request, cluster_id, d) for d in found]
        return JSONResponse(
            listing("KafkaConsumerGroupList", v3.url(request, cluster_id, "consumer-groups"), data)
        )

    @app.get("/v3/clusters/{cluster_id}/consumer-groups/{group}", tags=["v3"])
    async def get_group(cluster_id: str, group: str, request: Request) -> JSONResponse:
        described = await groups.one(await v3.checked(request, cluster_id), group)
        return JSONResponse(groups.group_json(request, cluster_id, described))

    @app.get("/v3/clusters/{cluster_id}/consumer-groups/{group}/lags", tags=["v3"])
    async def list_lags(cluster_id: str, group: str, request: Request) -> JSONResponse:
        lags = await groups.lags(await v3.checked(request, cluster_id), group)
        data = [groups.lag_json(request, cluster_id, group, lag) for lag in lags]
        url = v3.url(request, cluster_id, "consumer-groups", group, "lags")
        return JSONResponse(listing("KafkaConsumerLagList", url, data))

    @app.get("/v3/clusters/{cluster_id}/consumer-groups/{group}/lag-summary", tags=["v3"])
    async def lag_summary(cluster_id: str, group: str, request: Request) -> JSONResponse:
        lags = await groups.lags(await v3.checked(request, cluster_id), group)
        return JSONResponse(groups.summary_json(request, cluster_id, group, lags))


class _Groups:
    def __init__(self, v3: V3) -> None:
        self.v3 = v3

    def _admin(self, credentials: Credentials | None) -> Any:
        return self.v3.context.clients.admin(credentials)

    async def ids(self, credentials: Credentials | None) -> list[str]:
        listed = await result(self._admin(credentials).list_consumer_groups(request_timeout=ADMIN_TIMEOUT_S))
        return sorted(group.group_id for group in listed.valid)

    async def described(
        self, credentials: Credentials | None, ids: list[str]
    ) -> list[ConsumerGroupDescription]:
        """The groups' descriptions; one the admin client cannot describe (a share group) is left out."""
        if not ids:
            return []
        futures = self._admin(credentials).describe_consumer_groups(ids, request_timeout=ADMIN_TIMEOUT_S)
        found = await _each([futures[i] for i in ids])
        return [d for d in found if d is not None]

    async def one(self, credentials: Credentials | None, group: str) -> ConsumerGroupDescription:
        """The group (404 when the cluster knows nothing of it: no members, no offsets)."""
        found = await self.described(credentials, [group])
        if not found or (
            found[0].state in (ConsumerGroupState.DEAD, ConsumerGroupState.UNKNOWN) and not found[0].members
        ):
            raise errors.consumer_group_not_found(group)
        return found[0]

    async def lags(self, credentials: Credentials | None, group: str) -> list[Lag]:
        described = await self.one(credentials, group)
        admin = self._admin(credentials)
        request = [ConsumerGroupTopicPartitions(group)]
        offsets = await result(
            admin.list_consumer_group_offsets(request, request_timeout=ADMIN_TIMEOUT_S)[group]
        )
        committed = {(tp.topic, tp.partition): tp.offset for tp in offsets.topic_partitions if tp.offset >= 0}
        if not committed:
            return []
        ends = await self._ends(credentials, list(committed))
        owners = {
            (tp.topic, tp.partition): member
            for member in described.members
            for tp in member.assignment.topic_partitions
        }
        return [
            Lag(t, p, offset, ends[t, p], owners.get((t, p)))
            for (t, p), offset in sorted(committed.items())
            if (t, p) in ends
        ]

    async def _ends(
        self, credentials: Credentials | None, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], int]:
        """The partitions' log end offsets; one whose end cannot be read (its topic deleted
        since the group committed) is left out rather than failing the whole answer."""
        specs = {TopicPartition(topic, partition): OffsetSpec.latest() for topic, partition in partitions}
        futures = self._admin(credentials).list_offsets(specs, request_timeout=ADMIN_TIMEOUT_S)
        found = await _each(list(futures.values()))
        return {
            (tp.topic, tp.partition): int(end.offset) for tp, end in zip(futures, found) if end is not None
        }

    def group_json(
        self, request: Request, cluster_id: str, group: ConsumerGroupDescription
    ) -> dict[str, Any]:
        here = (cluster_id, "consumer-groups", group.group_id)
        coordinator = group.coordinator
        return self.v3.resource(
            request,
            "KafkaConsumerGroup",
            *here,
            consumer_group_id=group.group_id,
            is_simple=group.is_simple_consumer_group,
            partition_assignor=group.partition_assignor,
            state=group.state.name if group.state is not None else "UNKNOWN",
            coordinator=self.v3.related(request, cluster_id, "brokers", coordinator.id)
            if coordinator
            else None,
            consumers=self.v3.related(request, *here, "consumers"),
            lag_summary=self.v3.related(request, *here, "lag-summary"),
        )

    def lag_json(self, request: Request, cluster_id: str, group: str, lag: Lag) -> dict[str, Any]:
        owner = lag.owner
        return self.v3.resource(
            request,
            "KafkaConsumerLag",
            cluster_id,
            "consumer-groups",
            group,
            "lags",
            lag.topic,
            "partitions",
            lag.partition,
            consumer_group_id=group,
            topic_name=lag.topic,
            partition_id=lag.partition,
            current_offset=lag.committed,
            log_end_offset=lag.end,
            lag=lag.lag,
            consumer_id=owner.member_id if owner else "",
            instance_id=owner.group_instance_id if owner else None,
            client_id=owner.client_id if owner else "",
        )

    def summary_json(self, request: Request, cluster_id: str, group: str, lags: list[Lag]) -> dict[str, Any]:
        top = max(lags, key=lambda lag: lag.lag, default=None)
        owner = top.owner if top else None
        return self.v3.resource(
            request,
            "KafkaConsumerGroupLagSummary",
            cluster_id,
            "consumer-groups",
            group,
            "lag-summary",
            consumer_group_id=group,
            max_lag_consumer_id=owner.member_id if owner else "",
            max_lag_instance_id=owner.group_instance_id if owner else None,
            max_lag_client_id=owner.client_id if owner else "",
            max_lag_topic_name=top.topic if top else "",
            max_lag_partition_id=top.partition if top else 0,
            max_lag=top.lag if top else 0,
            total_lag=sum(lag.lag for lag in lags),
            max_lag_consumer=self.v3.related(
                request, cluster_id, "consumer-groups", group, "consumers", owner.member_id
            )
            if owner
            else None,
            max_lag_partition=self.v3.related(
                request, cluster_id, "topics", top.topic, "partitions", top.partition
            )
            if top
            else None,
        )


async def _each(futures: list[concurrent.futures.Future[T]]) -> list[T | None]:
    """Each admin call's result, None for one the cluster refused; any other failure is raised."""
    found = await asyncio.gather(*(result(future) for future in futures), return_exceptions=True)
    for outcome in found:
        if isinstance(outcome, BaseException) and not isinstance(outcome, RestError):
            raise outcome
    return [None if isinstance(outcome, BaseException) else outcome for outcome in found]

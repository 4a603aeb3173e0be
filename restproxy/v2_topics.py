"""API v2's read-only cluster views, as Confluent's proxy answers them: GET /topics (names),
/topics/{t} (configs and partitions), /topics/{t}/partitions[/{p}] (leader and replicas with
their ISR membership) and /brokers (ids). Each asks the cluster as the request's user."""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import PartitionMetadata
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from restproxy import errors
from restproxy.cluster import metadata, topic_configs, topic_of
from restproxy.context import ProxyContext

V2_MEDIA_TYPE = "application/vnd.kafka.v2+json"


class V2Response(JSONResponse):
    media_type = V2_MEDIA_TYPE


def routes(app: FastAPI, context: ProxyContext) -> None:
    @app.get("/topics", response_class=V2Response, tags=["v2"])
    async def list_topics(request: Request) -> V2Response:
        found = await metadata(context, context.credentials(request))
        return V2Response(sorted(found.topics))

    @app.get("/topics/{topic}", response_class=V2Response, tags=["v2"])
    async def get_topic(topic: str, request: Request) -> V2Response:
        credentials = context.credentials(request)
        found = topic_of(await metadata(context, credentials), topic, lambda: errors.topic_not_found(topic))
        configs = await topic_configs(context, credentials, topic)
        partitions = [partition_json(p) for _, p in sorted(found.partitions.items())]
        return V2Response({"name": topic, "configs": configs, "partitions": partitions})

    @app.get("/topics/{topic}/partitions", response_class=V2Response, tags=["v2"])
    async def list_partitions(topic: str, request: Request) -> V2Response:
        found = await metadata(context, context.credentials(request))
        partitions = topic_of(found, topic, lambda: errors.topic_not_found(topic)).partitions
        return V2Response([partition_json(p) for _, p in sorted(partitions.items())])

    @app.get("/topics/{topic}/partitions/{partition}", response_class=V2Response, tags=["v2"])
    async def get_partition(topic: str, partition: int, request: Request) -> V2Response:
        found = await metadata(context, context.credentials(request))
        partitions = topic_of(found, topic, lambda: errors.topic_not_found(topic)).partitions
        if partition not in partitions:
            raise errors.partition_not_found(partition)
        return V2Response(partition_json(partitions[partition]))

    @app.get("/brokers", response_class=V2Response, tags=["v2"])
    async def list_brokers(request: Request) -> V2Response:
        found = await metadata(context, context.credentials(request))
        return V2Response({"brokers": sorted(found.brokers)})


def partition_json(partition: PartitionMetadata) -> dict[str, Any]:
    leader = partition.leader
    replicas = [
        {"broker": broker, "leader": broker == leader, "in_sync": broker in partition.isrs}
        for broker in partition.replicas
    ]
    return {"partition": partition.id, "leader": leader, "replicas": replicas}

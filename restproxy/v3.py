"""API v3 (application/json), as Confluent's proxy serves it: the cluster, its topics (list,
create, describe, delete) and their partitions here; streamed produce in restproxy.v3_records,
consumer groups and their lags in restproxy.v3_groups. Errors are `{"error_code", "message"}`;
an unknown topic is Kafka's 40403, as Confluent's mapper answers UnknownTopicOrPartition."""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import ClusterMetadata, NewTopic, TopicMetadata
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from restproxy import errors, v3_groups, v3_records
from restproxy.cluster import ADMIN_TIMEOUT_S, metadata, result, topic_of
from restproxy.context import ProxyContext
from restproxy.v3_common import V3, json_body, listing, topic_not_found

MAX_INT32 = 2**31 - 1


class ConfigEntry(BaseModel):
    name: str = Field(min_length=1, max_length=255)
    value: str | None = None


class NewTopicBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    topic_name: str = Field(min_length=1, max_length=249)
    partitions_count: int | None = Field(default=None, ge=1, le=MAX_INT32)
    replication_factor: int | None = Field(default=None, ge=1, le=32767)
    configs: list[ConfigEntry] = Field(default=[], max_length=1000)
    validate_only: bool = False


_NEW_TOPIC_SCHEMA = {  # for /openapi.json: the route reads the body itself (415 for other types)
    "type": "object",
    "required": ["topic_name"],
    "properties": {
        "topic_name": {"type": "string"},
        "partitions_count": {"type": "integer", "minimum": 1},
        "replication_factor": {"type": "integer", "minimum": 1},
        "configs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "value": {"type": ["string", "null"]}},
            },
        },
        "validate_only": {"type": "boolean"},
    },
}
_NEW_TOPIC_OPENAPI = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": _NEW_TOPIC_SCHEMA}}}
}


def routes(app: FastAPI, context: ProxyContext) -> None:
    v3 = V3(context)
    _cluster_routes(app, v3)
    _topic_routes(app, v3)
    _partition_routes(app, v3)
    v3_records.routes(app, v3)
    v3_groups.routes(app, v3)


def _cluster_routes(app: FastAPI, v3: V3) -> None:
    @app.get("/v3/clusters", tags=["v3"])
    async def list_clusters(request: Request) -> JSONResponse:
        found = await metadata(v3.context, v3.context.credentials(request))
        cluster = _cluster(v3, request, await v3.cluster_id(v3.context.credentials(request)), found)
        return JSONResponse(listing("KafkaClusterList", v3.url(request).rstrip("/"), [cluster]))

    @app.get("/v3/clusters/{cluster_id}", tags=["v3"])
    async def get_cluster(cluster_id: str, request: Request) -> JSONResponse:
        credentials = await v3.checked(request, cluster_id)
        return JSONResponse(_cluster(v3, request, cluster_id, await metadata(v3.context, credentials)))


def _cluster(v3: V3, request: Request, cluster_id: str, found: ClusterMetadata) -> dict[str, Any]:
    controller = found.controller_id
    return v3.resource(
        request,
        "KafkaCluster",
        cluster_id,
        controller=v3.related(request, cluster_id, "brokers", controller) if controller >= 0 else None,
        acls=v3.related(request, cluster_id, "acls"),
        brokers=v3.related(request, cluster_id, "brokers"),
        broker_configs=v3.related(request, cluster_id, "broker-configs"),
        consumer_groups=v3.related(request, cluster_id, "consumer-groups"),
        topics=v3.related(request, cluster_id, "topics"),
        partition_reassignments=v3.related(
            request, cluster_id, "topics", "-", "partitions", "-", "reassignment"
        ),
    )


def _topic_routes(app: FastAPI, v3: V3) -> None:
    @app.get("/v3/clusters/{cluster_id}/topics", tags=["v3"])
    async def list_topics(cluster_id: str, request: Request) -> JSONResponse:
        found = await metadata(v3.context, await v3.checked(request, cluster_id))
        data = [_topic(v3, request, cluster_id, found.topics[name]) for name in sorted(found.topics)]
        return JSONResponse(listing("KafkaTopicList", v3.url(request, cluster_id, "topics"), data))

    @app.get("/v3/clusters/{cluster_id}/topics/{topic}", tags=["v3"])
    async def get_topic(cluster_id: str, topic: str, request: Request) -> JSONResponse:
        found = await metadata(v3.context, await v3.checked(request, cluster_id))
        return JSONResponse(_topic(v3, request, cluster_id, topic_of(found, topic, topic_not_found)))

    @app.post(
        "/v3/clusters/{cluster_id}/topics", status_code=201, openapi_extra=_NEW_TOPIC_OPENAPI, tags=["v3"]
    )
    async def create_topic(cluster_id: str, request: Request) -> JSONResponse:
        credentials = await v3.checked(request, cluster_id)
        body = await json_body(request, NewTopicBody)
        configs = {entry.name: entry.value for entry in body.configs if entry.value is not None}
        new = NewTopic(
            body.topic_name, body.partitions_count or -1, body.replication_factor or -1, config=configs
        )
        admin = v3.context.clients.admin(credentials)
        futures = admin.create_topics(
            [new], request_timeout=ADMIN_TIMEOUT_S, validate_only=body.validate_only
        )
        await result(futures[body.topic_name])
        created = _topic_json(
            v3, request, cluster_id, body.topic_name, body.partitions_count or 0, body.replication_factor or 0
        )
        if not body.validate_only:  # the counts the cluster chose when the request left them out
            topic = (await metadata(v3.context, credentials)).topics.get(body.topic_name)
            if topic is not None and topic.partitions:
                created = _topic(v3, request, cluster_id, topic)
        return JSONResponse(created, status_code=201, headers={"Location": created["metadata"]["self"]})

    @app.delete("/v3/clusters/{cluster_id}/topics/{topic}", status_code=204, tags=["v3"])
    async def delete_topic(cluster_id: str, topic: str, request: Request) -> Response:
        admin = v3.context.clients.admin(await v3.checked(request, cluster_id))
        await result(admin.delete_topics([topic], request_timeout=ADMIN_TIMEOUT_S)[topic])
        return Response(status_code=204)


def _topic(v3: V3, request: Request, cluster_id: str, topic: TopicMetadata) -> dict[str, Any]:
    first = topic.partitions.get(0)
    replication = len(first.replicas) if first is not None else 0
    return _topic_json(v3, request, cluster_id, str(topic.topic), len(topic.partitions), replication)


def _topic_json(
    v3: V3, request: Request, cluster_id: str, name: str, partitions: int, replication: int
) -> dict[str, Any]:
    return v3.resource(
        request,
        "KafkaTopic",
        cluster_id,
        "topics",
        name,
        topic_name=name,
        is_internal=name.startswith("__"),
        replication_factor=replication,
        partitions_count=partitions,
        partitions=v3.related(request, cluster_id, "topics", name, "partitions"),
        configs=v3.related(request, cluster_id, "topics", name, "configs"),
        partition_reassignments=v3.related(
            request, cluster_id, "topics", name, "partitions", "-", "reassignment"
        ),
        authorized_operations=[],
    )


def _partition_routes(app: FastAPI, v3: V3) -> None:
    @app.get("/v3/clusters/{cluster_id}/topics/{topic}/partitions", tags=["v3"])
    async def list_partitions(cluster_id: str, topic: str, request: Request) -> JSONResponse:
        found = await metadata(v3.context, await v3.checked(request, cluster_id))
        partitions = topic_of(found, topic, topic_not_found).partitions
        data = [
            _partition(v3, request, cluster_id, topic, p, partitions[p].leader) for p in sorted(partitions)
        ]
        url = v3.url(request, cluster_id, "topics", topic, "partitions")
        return JSONResponse(listing("KafkaPartitionList", url, data))

    @app.get("/v3/clusters/{cluster_id}/topics/{topic}/partitions/{partition}", tags=["v3"])
    async def get_partition(cluster_id: str, topic: str, partition: int, request: Request) -> JSONResponse:
        found = await metadata(v3.context, await v3.checked(request, cluster_id))
        partitions = topic_of(found, topic, topic_not_found).partitions
        if partition not in partitions:
            raise errors.partition_not_found(partition)
        return JSONResponse(
            _partition(v3, request, cluster_id, topic, partition, partitions[partition].leader)
        )


def _partition(
    v3: V3, request: Request, cluster_id: str, topic: str, partition: int, leader: int
) -> dict[str, Any]:
    here = (cluster_id, "topics", topic, "partitions", partition)
    return v3.resource(
        request,
        "KafkaPartition",
        cluster_id,
        *here[1:],
        topic_name=topic,
        partition_id=partition,
        leader=v3.related(request, *here, "replicas", leader) if leader >= 0 else None,
        replicas=v3.related(request, *here, "replicas"),
        reassignment=v3.related(request, *here, "reassignment"),
    )

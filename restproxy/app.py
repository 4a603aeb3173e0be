"""Confluent REST Proxy's API on FastAPI (which also serves its OpenAPI description at
/openapi.json): v2 (produce with embedded formats, consumer instances) and v3 (clusters,
topics, partitions, streamed produce, consumer groups). Every error is Confluent's body."""

from __future__ import annotations

from fastapi import FastAPI

from httpservice.clusterlogin import ClusterLogin
from httpservice.guards import guard
from restproxy import v2_consumers, v2_produce, v3
from restproxy.context import ProxyContext

V2_MEDIA_TYPE = "application/vnd.kafka.v2+json"
CONTENT_TYPES = (
    V2_MEDIA_TYPE,
    "application/vnd.kafka.json.v2+json",
    "application/vnd.kafka.binary.v2+json",
    "application/vnd.kafka.avro.v2+json",
    "application/vnd.kafka.jsonschema.v2+json",
    "application/vnd.kafka.protobuf.v2+json",
    "application/json",
    "application/octet-stream",
)


def create_app(
    context: ProxyContext, max_body_bytes: int = 8 << 20, login: ClusterLogin | None = None
) -> FastAPI:
    app = FastAPI(
        title="kctl REST proxy",
        description="Confluent REST Proxy's API (v2 and v3) in front of a Kafka cluster.",
        version="1",
    )
    guard(
        app,
        max_body_bytes=max_body_bytes,
        content_types=CONTENT_TYPES,
        error_media_type=V2_MEDIA_TYPE,
        login=login,
        realm="KafkaRestProxy",
    )

    @app.get("/")
    def root() -> dict[str, object]:
        return {}

    v2_produce.routes(app, context)
    v2_consumers.routes(app, context)
    v3.routes(app, context)
    return app

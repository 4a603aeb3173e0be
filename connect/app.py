"""Kafka Connect's REST API on FastAPI (which also serves its OpenAPI description at
/openapi.json); every error in Connect's shape, `{"error_code": <status>, "message": ...}`."""

from __future__ import annotations

from fastapi import FastAPI

from connect import api
from connect.herder import Herder
from httpservice.basicauth import BasicAuth
from httpservice.clusterlogin import ClusterLogin
from httpservice.errors import confluent_errors
from httpservice.limits import RequestLimits


def create_app(
    herder: Herder, cluster_id: str, max_body_bytes: int = 8 << 20, login: ClusterLogin | None = None
) -> FastAPI:
    app = FastAPI(
        title="kctl connect worker",
        description="Kafka Connect's REST API: connectors as Spark Structured Streaming queries.",
        version="1",
    )
    app.add_middleware(
        RequestLimits,
        max_body_bytes=max_body_bytes,
        content_types=("application/json",),
        error_media_type="application/json",
    )
    if login is not None:
        app.add_middleware(BasicAuth, login=login, realm="KafkaConnect")  # added last: runs first
    confluent_errors(app)
    api.routes(app, herder, cluster_id)
    return app

"""Kafka Connect's REST API on FastAPI (which also serves its OpenAPI description at
/openapi.json); every error in Connect's shape, `{"error_code": <status>, "message": ...}`."""

from __future__ import annotations

from fastapi import FastAPI

from connect import api
from connect.herder import Herder
from httpservice.clusterlogin import ClusterLogin
from httpservice.guards import guard


def create_app(
    herder: Herder, cluster_id: str, max_body_bytes: int = 8 << 20, login: ClusterLogin | None = None
) -> FastAPI:
    app = FastAPI(
        title="kctl connect worker",
        description="Kafka Connect's REST API: connectors as Spark Structured Streaming queries.",
        version="1",
    )
    guard(
        app,
        max_body_bytes=max_body_bytes,
        content_types=("application/json",),
        error_media_type="application/json",
        login=login,
        realm="KafkaConnect",
    )
    api.routes(app, herder, cluster_id)
    return app

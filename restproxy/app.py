"""Confluent REST Proxy's API on FastAPI (which also serves its OpenAPI description at
/openapi.json): v2 (produce with embedded formats, consumer instances) and v3 (clusters,
topics, partitions, streamed produce, consumer groups). Every error is Confluent's body."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from httpservice.basicauth import BasicAuth
from httpservice.clusterlogin import ClusterLogin
from httpservice.limits import RequestLimits
from restproxy import v2_consumers, v2_produce, v3
from restproxy.context import ProxyContext
from restproxy.errors import RestError

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
    app.add_middleware(
        RequestLimits,
        max_body_bytes=max_body_bytes,
        content_types=CONTENT_TYPES,
        error_media_type=V2_MEDIA_TYPE,
    )
    if login is not None:
        app.add_middleware(BasicAuth, login=login, realm="KafkaRestProxy")  # added last: runs first
    _errors(app)

    @app.get("/")
    def root() -> dict[str, object]:
        return {}

    v2_produce.routes(app, context)
    v2_consumers.routes(app, context)
    v3.routes(app, context)
    return app


def _errors(app: FastAPI) -> None:
    @app.exception_handler(RestError)
    def rest_error(request: Request, exc: RestError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.http_status)

    @app.exception_handler(HTTPException)
    def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse(
            {"error_code": exc.status_code, "message": f"HTTP {exc.status_code} {exc.detail}"},
            status_code=exc.status_code,
        )

    @app.exception_handler(RequestValidationError)
    def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"msg": "invalid request"}
        if first.get("type") == "json_invalid":  # as Confluent's: malformed JSON is a 400
            return JSONResponse({"error_code": 400, "message": f"Unexpected character: {first['msg']}"}, 400)
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return JSONResponse({"error_code": 422, "message": f"{where}: {first['msg']}".lstrip(": ")}, 422)

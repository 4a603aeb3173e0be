"""Confluent Schema Registry's REST API over `SchemaRegistry`, on FastAPI (which also serves its
OpenAPI description at /openapi.json). Every answer, errors included, is what Confluent's
registry answers, so its clients, serializers and UIs work unchanged."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, FastAPI, Query
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from httpservice.clusterlogin import ClusterLogin
from httpservice.guards import guard
from schemaregistry import schemas
from schemaregistry.records import GLOBAL, Reference, SchemaValue
from schemaregistry.registry import NewSchema, SchemaRegistry, parse_version
from schemaregistry.state import StoredSchema

MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
CONTENT_TYPES = (
    MEDIA_TYPE,
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
)
MAX_REFERENCES = 1000


class SchemaRegistryResponse(JSONResponse):
    media_type = MEDIA_TYPE


class ReferenceBody(BaseModel):
    name: str
    subject: str
    version: int = Field(ge=1, le=2**31 - 1)


class SchemaBody(BaseModel):
    """A schema to register, look up or check; other fields newer clients send are ignored."""

    model_config = ConfigDict(extra="ignore")
    schema_: str = Field(alias="schema")
    schemaType: str = "AVRO"
    references: list[ReferenceBody] = Field(default=[], max_length=MAX_REFERENCES)
    id: int | None = Field(default=None, ge=1, le=2**31 - 1)
    version: int | None = Field(default=None, ge=1, le=2**31 - 1)

    def new_schema(self) -> NewSchema:
        refs = tuple(Reference(r.name, r.subject, r.version) for r in self.references)
        return NewSchema(self.schema_, self.schemaType.upper(), refs)


class CompatibilityBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    compatibility: str | None = None
    compatibilityLevel: str | None = None  # what GET answers; accepted on PUT too


class ModeBody(BaseModel):
    model_config = ConfigDict(extra="ignore")
    mode: str


Flag = Annotated[bool, Query()]


def create_app(
    registry: SchemaRegistry, max_body_bytes: int = 8 << 20, login: ClusterLogin | None = None
) -> FastAPI:
    app = FastAPI(
        title="kctl schema registry",
        description="Confluent Schema Registry's REST API, kept in the cluster's _schemas topic.",
        version="1",
        default_response_class=SchemaRegistryResponse,
    )
    guard(
        app,
        max_body_bytes=max_body_bytes,
        content_types=CONTENT_TYPES,
        error_media_type=MEDIA_TYPE,
        login=login,
        realm="SchemaRegistry",
        response=SchemaRegistryResponse,
    )
    _schema_routes(app, registry)
    _subject_routes(app, registry)
    _compatibility_routes(app, registry)
    _config_routes(app, registry)
    _mode_routes(app, registry)
    return app


def _schema_json(registry: SchemaRegistry, stored: StoredSchema, fmt: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": _schema_text(registry, stored, fmt)}
    if stored.schema_type != "AVRO":
        body["schemaType"] = stored.schema_type
    if stored.references:
        body["references"] = [r.to_json() for r in stored.references]
    return body


def _schema_text(registry: SchemaRegistry, stored: StoredSchema, fmt: str | None) -> str:
    """The schema's text; for Protobuf with format=serialized, its base64 file descriptor
    (what confluent-kafka's Protobuf deserializer asks for)."""
    if fmt == "serialized" and stored.schema_type == "PROTOBUF":
        return schemas.serialized(registry.store.read(lambda state: registry.parsed(state, stored)))
    return stored.schema


def _version_json(registry: SchemaRegistry, value: SchemaValue, fmt: str | None = None) -> dict[str, Any]:
    stored = StoredSchema(value.schema_type, value.schema, value.references)
    return {
        "subject": value.subject,
        "version": value.version,
        "id": value.id,
        **_schema_json(registry, stored, fmt),
    }


def _schema_routes(app: FastAPI, registry: SchemaRegistry) -> None:
    @app.get("/")
    def root() -> dict[str, Any]:
        return {}

    @app.get("/schemas/types")
    def schema_types() -> list[str]:
        return list(schemas.SCHEMA_TYPES)

    @app.get("/schemas/ids/{schema_id}")
    def schema_by_id(schema_id: int, format: str | None = None, subject: str | None = None) -> dict[str, Any]:
        stored, _ = registry.schema_by_id(schema_id)
        return _schema_json(registry, stored, format)

    @app.get("/schemas/ids/{schema_id}/schema", response_class=PlainTextResponse)
    def raw_schema_by_id(schema_id: int, format: str | None = None) -> str:
        stored, _ = registry.schema_by_id(schema_id)
        return _schema_text(registry, stored, format)

    @app.get("/schemas/ids/{schema_id}/subjects")
    def subjects_of_id(schema_id: int, deleted: Flag = False) -> list[str]:
        _, usages = registry.schema_by_id(schema_id)
        return sorted({v.subject for v in usages if deleted or not v.deleted})

    @app.get("/schemas/ids/{schema_id}/versions")
    def versions_of_id(schema_id: int, deleted: Flag = False) -> list[dict[str, Any]]:
        _, usages = registry.schema_by_id(schema_id)
        return [{"subject": v.subject, "version": v.version} for v in usages if deleted or not v.deleted]


def _subject_routes(app: FastAPI, registry: SchemaRegistry) -> None:
    @app.get("/subjects")
    def subjects(deleted: Flag = False, deletedOnly: Flag = False, subjectPrefix: str = "") -> list[str]:
        return registry.subjects(deleted, deletedOnly, subjectPrefix)

    @app.get("/subjects/{subject}/versions")
    def versions(subject: str, deleted: Flag = False) -> list[int]:
        return registry.versions(subject, deleted)

    @app.get("/subjects/{subject}/versions/{version}")
    def version(
        subject: str, version: str, deleted: Flag = False, format: str | None = None
    ) -> dict[str, Any]:
        return _version_json(registry, registry.version(subject, parse_version(version), deleted), format)

    @app.get("/subjects/{subject}/versions/{version}/schema", response_class=PlainTextResponse)
    def raw_version(subject: str, version: str, deleted: Flag = False) -> str:
        return registry.version(subject, parse_version(version), deleted).schema

    @app.get("/subjects/{subject}/versions/{version}/referencedby")
    def referenced_by(subject: str, version: str) -> list[int]:
        value = registry.version(subject, parse_version(version))
        return registry.referenced_by(subject, value.version)

    @app.post("/subjects/{subject}/versions")
    def register(
        subject: str, body: Annotated[SchemaBody, Body()], normalize: Flag = False
    ) -> dict[str, Any]:
        value = registry.register(subject, body.new_schema(), body.id, body.version)
        return {"id": value.id, "version": value.version, **_version_json(registry, value)}

    @app.post("/subjects/{subject}")
    def lookup(
        subject: str, body: Annotated[SchemaBody, Body()], deleted: Flag = False, normalize: Flag = False
    ) -> dict[str, Any]:
        return _version_json(registry, registry.lookup(subject, body.new_schema(), deleted))

    @app.delete("/subjects/{subject}")
    def delete_subject(subject: str, permanent: Flag = False) -> list[int]:
        return registry.delete_subject(subject, permanent)

    @app.delete("/subjects/{subject}/versions/{version}")
    def delete_version(subject: str, version: str, permanent: Flag = False) -> int:
        return registry.delete_version(subject, parse_version(version), permanent)


def _compatibility_routes(app: FastAPI, registry: SchemaRegistry) -> None:
    def answer(messages: list[str], verbose: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"is_compatible": not messages}
        if verbose:
            body["messages"] = messages
        return body

    @app.post("/compatibility/subjects/{subject}/versions/{version}")
    def check_version(
        subject: str, version: str, body: Annotated[SchemaBody, Body()], verbose: Flag = False
    ) -> dict[str, Any]:
        return answer(registry.check(subject, body.new_schema(), parse_version(version)), verbose)

    @app.post("/compatibility/subjects/{subject}/versions")
    def check_all(subject: str, body: Annotated[SchemaBody, Body()], verbose: Flag = False) -> dict[str, Any]:
        return answer(registry.check(subject, body.new_schema(), None), verbose)


def _config_routes(app: FastAPI, registry: SchemaRegistry) -> None:
    @app.get("/config")
    def get_global() -> dict[str, Any]:
        return {"compatibilityLevel": registry.compatibility(GLOBAL)}

    @app.put("/config")
    def put_global(body: Annotated[CompatibilityBody, Body()]) -> dict[str, Any]:
        return {
            "compatibility": registry.set_compatibility(GLOBAL, body.compatibility or body.compatibilityLevel)
        }

    @app.delete("/config")
    def delete_global() -> dict[str, Any]:
        return {"compatibilityLevel": registry.delete_compatibility(GLOBAL)}

    @app.get("/config/{subject}")
    def get_subject(subject: str, defaultToGlobal: Flag = False) -> dict[str, Any]:
        return {"compatibilityLevel": registry.compatibility(subject, defaultToGlobal)}

    @app.put("/config/{subject}")
    def put_subject(subject: str, body: Annotated[CompatibilityBody, Body()]) -> dict[str, Any]:
        return {
            "compatibility": registry.set_compatibility(
                subject, body.compatibility or body.compatibilityLevel
            )
        }

    @app.delete("/config/{subject}")
    def delete_subject_config(subject: str) -> dict[str, Any]:
        return {"compatibilityLevel": registry.delete_compatibility(subject)}


def _mode_routes(app: FastAPI, registry: SchemaRegistry) -> None:
    @app.get("/mode")
    def get_global_mode() -> dict[str, Any]:
        return {"mode": registry.mode(GLOBAL)}

    @app.put("/mode")
    def put_global_mode(body: Annotated[ModeBody, Body()], force: Flag = False) -> dict[str, Any]:
        return {"mode": registry.set_mode(GLOBAL, body.mode, force)}

    @app.get("/mode/{subject}")
    def get_mode(subject: str, defaultToGlobal: Flag = False) -> dict[str, Any]:
        return {"mode": registry.mode(subject, defaultToGlobal)}

    @app.put("/mode/{subject}")
    def put_mode(subject: str, body: Annotated[ModeBody, Body()], force: Flag = False) -> dict[str, Any]:
        return {"mode": registry.set_mode(subject, body.mode, force)}

    @app.delete("/mode/{subject}")
    def delete_mode(subject: str) -> dict[str, Any]:
        return {"mode": registry.delete_mode(subject)}

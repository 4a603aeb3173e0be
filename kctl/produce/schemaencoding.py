"""`kctl produce --value-schema FILE | --value-schema-id N | --value-subject S` (and the key
twins): each input value (or key) is a JSON document, encoded with the schema in Confluent's
wire format (magic byte, schema id, Avro / Protobuf / JSON Schema data), as confluent-kafka's
serializers write it, so their deserializers, Spark's from_avro and `kctl consume` read it.

A schema given as a file is registered under the topic's subject (TopicNameStrategy:
TOPIC-value, TOPIC-key), as the serializers' auto.register.schemas does: a schema the subject
refuses as incompatible stops the run before anything is sent (exit 6)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.recordjson import ProduceArgs

if TYPE_CHECKING:
    from kctl.produce.producing import Records
    from schemaregistry.client import RegistryClient
    from schemaregistry.serde import Encoder

SUFFIX_TYPES = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}


def _file_option(side: str) -> object:
    return typer.Option(
        f"--{side}-schema",
        metavar="FILE",
        show_default=False,
        dir_okay=False,
        help=f"Encode each {side} (a JSON document) with this schema (.avsc Avro, .proto Protobuf, "
        f".json JSON Schema), registered under TOPIC-{side} if it is not already.",
    )


def _id_option(side: str) -> object:
    return typer.Option(
        f"--{side}-schema-id",
        metavar="ID",
        min=1,
        show_default=False,
        help=f"Encode each {side} with the registered schema of this id.",
    )


def _subject_option(side: str) -> object:
    return typer.Option(
        f"--{side}-subject",
        metavar="SUBJECT",
        show_default=False,
        help=f"Encode each {side} with the latest schema of this subject.",
    )


ValueSchemaFile = Annotated[Path | None, _file_option("value")]
ValueSchemaId = Annotated[int | None, _id_option("value")]
ValueSubject = Annotated[str | None, _subject_option("value")]
KeySchemaFile = Annotated[Path | None, _file_option("key")]
KeySchemaId = Annotated[int | None, _id_option("key")]
KeySubject = Annotated[str | None, _subject_option("key")]


@dataclass(frozen=True)
class SchemaChoice:
    """How one side (key or value) names its schema: at most one of the three."""

    side: str
    file: Path | None = None
    schema_id: int | None = None
    subject: str | None = None

    def given(self) -> bool:
        chosen = [x for x in (self.file, self.schema_id, self.subject) if x is not None]
        if len(chosen) > 1:
            raise KctlError(
                f"give one of --{self.side}-schema, --{self.side}-schema-id and --{self.side}-subject",
                ExitCode.USAGE,
            )
        return bool(chosen)

    def encoder(self, client: RegistryClient, topic: str) -> Encoder:
        from kctl.schema.registryclient import call
        from schemaregistry.serde import Encoder

        schema_id = self.schema_id
        if self.file is not None:
            text = _read(self.file)
            schema_type = SUFFIX_TYPES.get(self.file.suffix.lower(), "AVRO")
            schema_id = call(lambda: client.register(f"{topic}-{self.side}", text, schema_type))
        elif self.subject is not None:
            subject = self.subject
            schema_id = int(call(lambda: client.version(subject, "latest"))["id"])
        assert schema_id is not None
        chosen_id = schema_id
        return Encoder(chosen_id, call(lambda: client.parsed_schema_by_id(chosen_id)))


def _read(file: Path) -> str:
    try:
        return file.read_text()
    except OSError as exc:
        raise KctlError(f"cannot read {file}: {exc.strerror}", ExitCode.INVALID_INPUT) from None


class EncodedRecords:
    """Records whose values (and keys) are JSON documents, encoded on the way; the first that
    is not JSON or does not fit its schema ends the input, named by its line and field."""

    def __init__(self, source: Records, value: Encoder | None, key: Encoder | None) -> None:
        self.source = source
        self.value_encoder = value
        self.key_encoder = key
        self.own_error: KctlError | None = None
        self.line = 0

    @property
    def error(self) -> KctlError | None:
        return self.own_error or self.source.error

    def records(self, lines: Iterable[bytes]) -> Iterator[ProduceArgs]:
        for value, key, extra in self.source.records(lines):
            self.line += 1
            try:
                value = _encoded(self.value_encoder, value)
                key = _encoded(self.key_encoder, key)
            except KctlError as exc:
                self.own_error = KctlError(f"line {self.line}: {exc.message}", exc.code)
                return
            yield value, key, extra


def _encoded(encoder: Encoder | None, data: bytes | None) -> bytes | None:
    from schemaregistry.serde import RecordDoesNotFit

    if encoder is None or data is None:
        return data
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise KctlError(f"not a JSON document: {exc}", ExitCode.INVALID_INPUT) from None
    try:
        return encoder.encode(document)
    except RecordDoesNotFit as exc:
        raise KctlError(f"field {exc.field or '/'}: {exc.reason}", ExitCode.INVALID_INPUT) from None


@dataclass(frozen=True)
class Encoders:
    value: Encoder | None
    key: Encoder | None

    def wrap(self, source: Records) -> Records:
        return EncodedRecords(source, self.value, self.key)


def encoders(
    topic: str,
    value: SchemaChoice,
    key: SchemaChoice,
    registry: str | None,
    cluster_dir: Path | None,
    timeout: float,
) -> Encoders | None:
    """The encoders chosen, their schemas registered or fetched; None when no schema is chosen
    (then no registry is contacted)."""
    wanted = [choice for choice in (value, key) if choice.given()]
    if not wanted:
        return None
    from kctl.schema.registryclient import client

    registry_client = client(registry, cluster_dir, timeout)
    chosen = {choice.side: choice.encoder(registry_client, topic) for choice in wanted}
    return Encoders(chosen.get("value"), chosen.get("key"))

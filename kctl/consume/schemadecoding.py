"""`kctl consume` shows records written in Confluent's wire format (a schema registry's: magic
byte 0x00, a 4-byte schema id, Avro / Protobuf / JSON Schema data) as JSON, when it knows a
registry: --schema-registry, $KCTL_SCHEMA_REGISTRY_URL, or the local cluster's when the local
cluster is the one consumed. A record whose schema is unknown, or that does not decode with
it, is shown as its bytes with one warning per schema id: never dropped.

With --json the record stays lossless (`value` keeps its bytes, so `kctl produce -J json`
writes the same record back) and gains `value_schema_id` and `value_decoded` (`key_*` alike).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kctl.consume.formatting import json_line, record_doc
from kctl.kafka.record import Record
from kctl.shell import console
from kctl.shell.connectionoptions import ConnectionOptions

if TYPE_CHECKING:
    from schemaregistry.client import RegistryClient
    from schemaregistry.schemas import ParsedSchema

Render = Callable[[Record], bytes]


class Decode(str, Enum):
    AUTO = "auto"
    NONE = "none"


DecodeOption = Annotated[
    Decode,
    typer.Option(
        "--decode",
        help="auto: show keys and values written with a schema registry's schemas (Confluent's "
        "wire format) as JSON, when a registry is known (--schema-registry, "
        "$KCTL_SCHEMA_REGISTRY_URL, or the local cluster's); none: show their bytes.",
    ),
]


class SchemaDecoder:
    """Decodes framed keys and values with the registry's schemas, fetched once per id; what
    it cannot decode it tells `warn` once per schema id (stderr by default; the watch keeps
    them in its screen)."""

    def __init__(self, client: RegistryClient, warn: Callable[[str], None] = console.warn) -> None:
        self.client = client
        self._tell = warn
        self._schemas: dict[int, ParsedSchema | None] = {}
        self._warned: set[int] = set()

    def decode(self, data: bytes | None) -> tuple[int, Any] | None:
        """(schema id, the JSON-able value), or None to show the bytes as they are."""
        if data is None or len(data) < 5 or data[0] != 0:
            return None
        schema_id = int.from_bytes(data[1:5], "big")
        schema = self._schema(schema_id)
        if schema is None:
            return None
        from schemaregistry import serde, wire

        try:
            _, indexes, body = wire.unframe(data, protobuf=schema.schema_type == "PROTOBUF")
            return schema_id, serde.decode(schema, indexes, body)
        except ValueError as exc:
            self._warn(schema_id, f"a record does not decode with schema {schema_id}: {exc}; shown as bytes")
            return None

    def _schema(self, schema_id: int) -> ParsedSchema | None:
        if schema_id not in self._schemas:
            from schemaregistry.client import RegistryClientError

            try:
                self._schemas[schema_id] = self.client.parsed_schema_by_id(schema_id)
            except RegistryClientError as exc:
                self._schemas[schema_id] = None
                self._warn(schema_id, f"schema id {schema_id}: {exc}; its records are shown as bytes")
            except ValueError as exc:  # the registry's schema does not parse here
                self._schemas[schema_id] = None
                self._warn(schema_id, f"schema id {schema_id} cannot be read: {exc}; shown as bytes")
        return self._schemas[schema_id]

    def _warn(self, schema_id: int, message: str) -> None:
        if schema_id not in self._warned:
            self._warned.add(schema_id)
            self._tell(message)


class DecodedRecord:
    """A record whose key and value read as their decoded JSON text, for format tokens."""

    def __init__(self, record: Record, decoder: SchemaDecoder) -> None:
        self._record = record
        self._decoder = decoder

    def key(self) -> bytes | None:
        return _shown(self._decoder, self._record.key())

    def value(self) -> bytes | None:
        return _shown(self._decoder, self._record.value())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._record, name)


def _shown(decoder: SchemaDecoder, data: bytes | None) -> bytes | None:
    decoded = decoder.decode(data)
    return data if decoded is None else _compact(decoded[1]).encode()


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def schema_decoder(
    registry: str | None, options: ConnectionOptions, warn: Callable[[str], None] = console.warn
) -> SchemaDecoder | None:
    """A decoder when a registry is known: named, or the local cluster's when the local cluster
    is the one read (no -b, no $KCTL_BOOTSTRAP: another cluster's ids mean other schemas)."""
    from kctl.kafka.bootstrap import BOOTSTRAP_ENV, resolve_cluster_dir
    from kctl.schema.locate import known_registry_url
    from kctl.schema.registryclient import registry_client

    directory = resolve_cluster_dir(options.cluster_dir)
    local_cluster = not (options.bootstrap or os.environ.get(BOOTSTRAP_ENV))
    url = known_registry_url(registry, directory, local_cluster=local_cluster)
    return None if url is None else SchemaDecoder(registry_client(url, directory, options.timeout), warn)


def decoding(render: Render, decoder: SchemaDecoder | None, json_output: bool, shared: bool) -> Render:
    """`render`, showing framed records decoded when there is a decoder."""
    if decoder is None:
        return render
    if json_output:
        return lambda record: json_line(_decoded_doc(record, decoder, shared))
    return lambda record: render(DecodedRecord(record, decoder))  # type: ignore[arg-type]


def _decoded_doc(record: Record, decoder: SchemaDecoder, shared: bool) -> dict[str, Any]:
    doc = record_doc(record, shared)
    for side, data in (("key", record.key()), ("value", record.value())):
        decoded = decoder.decode(data)
        if decoded is not None:
            doc[f"{side}_schema_id"], doc[f"{side}_decoded"] = decoded
    return doc

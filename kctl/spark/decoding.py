"""Keys and values in Confluent's wire format, decoded into Spark columns by the source.

The driver picks the reader schema when the query is defined (the subject's latest version:
`plan_decoding`), and the column's Spark type follows from it (kctl.spark.schematypes).
Executors decode an Arrow batch at a time (`BatchDecoder`): each payload's framing names
its writer schema, fetched from the registry once per id per task, and the record is read
with it into the reader's type: Avro by Avro's schema resolution (fastavro), Protobuf and
JSON Schema field by field, by name (kctl.spark.resolving, kctl.spark.conforming).

A record that cannot be decoded is never dropped: its `value` is null, `value_error` says
why (not framed, schema unknown to the registry, of another type, bytes that do not decode)
and `value_raw` keeps its bytes (`key_*` alike); failOnDecodeError=true fails the task
instead. A registry that does not answer fails the task too (Spark retries it): records are
not nulled for an outage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.types import DataType, StructType

from kctl.spark.conforming import json_decoder
from kctl.spark.formats import RegistryFormats
from kctl.spark.options import Subscription
from kctl.spark.resolving import ProtobufDecoder, avro_decoder
from kctl.spark.schema import arrow_schema, decoded_source_schema
from kctl.spark.schematypes import spark_type
from schemaregistry.client import RegistryClient, RegistryClientError, RegistryError
from schemaregistry.wire import BadPayload

Convert = Callable[[Any], Any]
MAX_SCHEMA_ID = 2**31 - 1  # ids are Java ints in Confluent's registry, and int columns here


@dataclass(frozen=True)
class DecodedSide:
    """One decoded side as the driver planned it; travels to the executors."""

    side: str  # "key" or "value"
    schema_type: str  # AVRO, PROTOBUF or JSON
    reader_id: int  # the id of the subject's latest version when the query was defined
    data_type: DataType


@dataclass(frozen=True)
class SourceDecoding:
    url: str
    sides: tuple[DecodedSide, ...]
    fail_on_error: bool

    def schema(self, include_headers: bool) -> StructType:
        return decoded_source_schema(include_headers, {s.side: s.data_type for s in self.sides})


def plan_decoding(formats: RegistryFormats, subscription: Subscription) -> SourceDecoding:
    """The reader schemas of the decoded sides, from the registry (on the driver, once)."""
    client = RegistryClient(formats.url)
    planned = []
    for side in formats.sides:
        subject = side.subject_for(_single_topic(subscription))
        try:
            schema_id = int(client.version(subject, "latest")["id"])
            schema = client.parsed_schema_by_id(schema_id)
        except (RegistryClientError, ValueError) as error:
            raise ValueError(f"{side.option}: no schema for subject {subject}: {error}") from None
        if schema.schema_type != side.schema_type:
            raise ValueError(
                f"{side.option} is {side.schema_type} but subject {subject}'s latest schema "
                f"(id {schema_id}) is {schema.schema_type}"
            )
        planned.append(DecodedSide(side.side, side.schema_type, schema_id, spark_type(schema)))
    return SourceDecoding(formats.url, tuple(planned), formats.fail_on_decode_error)


def _single_topic(subscription: Subscription) -> str | None:
    topics = set(subscription.topics) | {tp.topic for tp in subscription.assigned}
    return next(iter(topics)) if len(topics) == 1 and subscription.pattern is None else None


class BatchDecoder:
    """Decodes the framed sides of the source's Arrow batches, for the records of one task."""

    def __init__(self, decoding: SourceDecoding, include_headers: bool) -> None:
        self._decoding = decoding
        self._schema = arrow_schema(decoding.schema(include_headers))
        client = RegistryClient(decoding.url)  # its cache holds the schemas of this task
        self._sides = [SideDecoder(side, client) for side in decoding.sides]

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """`batch` (Spark's Kafka columns) with its framed sides decoded."""
        columns = {name: batch.column(name) for name in batch.schema.names}
        for decoder in self._sides:
            side = decoder.side
            decoded = decoder.decode_all(batch.column(side.side).to_pylist())
            arrow_type = self._schema.field(side.side).type
            values = _values_array(decoded, arrow_type)
            if self._decoding.fail_on_error:
                _fail_on_error(decoded, side, batch)
            columns[side.side] = values
            columns[f"{side.side}_schema_id"] = pa.array(decoded.schema_ids, pa.int32())
            columns[f"{side.side}_error"] = pa.array(decoded.errors, pa.string())
            columns[f"{side.side}_raw"] = pa.array(decoded.raws, pa.binary())
        return pa.RecordBatch.from_arrays([columns[name] for name in self._schema.names], schema=self._schema)


class Decoded:
    """One column's payloads decoded; a record in error has no value and keeps its bytes."""

    def __init__(self, payloads: list[bytes | None]) -> None:
        self.payloads = payloads
        self.values: list[Any] = [None] * len(payloads)
        self.schema_ids: list[int | None] = [None] * len(payloads)
        self.errors: list[str | None] = [None] * len(payloads)
        self.raws: list[bytes | None] = [None] * len(payloads)

    def fail(self, index: int, error: str) -> None:
        self.values[index], self.errors[index], self.raws[index] = None, error, self.payloads[index]


def _values_array(decoded: Decoded, arrow_type: pa.DataType) -> pa.Array:
    """The decoded values as one Arrow array; should a value not convert (a decimal of
    another scale, a date out of range), each is tried alone and those that fail become
    errors rather than failing the batch."""
    try:
        return pa.array(decoded.values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError):
        pass
    for index, value in enumerate(decoded.values):
        try:
            pa.array([value], arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError) as error:
            decoded.fail(index, f"the value does not fit {arrow_type}: {error}")
    return pa.array(decoded.values, arrow_type)


def _fail_on_error(decoded: Decoded, side: DecodedSide, batch: pa.RecordBatch) -> None:
    for index, error in enumerate(decoded.errors):
        if error is not None:
            topic, partition = batch.column("topic")[index].as_py(), batch.column("partition")[index].as_py()
            offset = batch.column("offset")[index].as_py()
            raise ValueError(
                f"the {side.side} of {topic}/{partition} at offset {offset} does not decode: {error} "
                "(failOnDecodeError=true)"
            )


class SideDecoder:
    """Payloads of one side to values of its Spark type; the schemas of the ids it meets are
    fetched once and each writer schema's decoder built once."""

    def __init__(self, side: DecodedSide, client: RegistryClient) -> None:
        self.side = side
        self._client = client
        self._by_id: dict[int, Convert | str] = {}  # a decoder of framed payloads, or why none

    def decode_all(self, payloads: list[bytes | None]) -> Decoded:
        decoded = Decoded(payloads)
        for index, payload in enumerate(payloads):
            if payload is None:
                continue  # a null key or a tombstone: null, and no error
            schema_id = _schema_id(payload)
            if schema_id is None:
                decoded.fail(index, "not in Confluent's wire format (magic byte 0, schema id)")
                continue
            decoded.schema_ids[index] = schema_id
            decode = self._decoder(schema_id)
            if isinstance(decode, str):
                decoded.fail(index, decode)
                continue
            try:
                decoded.values[index] = decode(payload)
            except BadPayload as error:
                decoded.fail(index, f"does not decode with schema {schema_id}: {error}")
        return decoded

    def _decoder(self, schema_id: int) -> Convert | str:
        if schema_id not in self._by_id:
            self._by_id[schema_id] = self._build(schema_id)
        return self._by_id[schema_id]

    def _build(self, schema_id: int) -> Convert | str:
        """The decoder of payloads written with schema `schema_id`, or why there is none."""
        side = self.side
        try:
            writer = self._client.parsed_schema_by_id(schema_id)
        except RegistryError as error:
            if error.status != 404:
                raise  # the registry failing is no answer about the record: the task fails
            return f"schema {schema_id}: {error}"
        except ValueError as error:  # the registry's schema does not parse here
            return f"schema {schema_id} cannot be read: {error}"
        if writer.schema_type != side.schema_type:
            return f"schema {schema_id} is {writer.schema_type}, not {side.schema_type}"
        if side.schema_type == "AVRO":
            return avro_decoder(writer, self._client.parsed_schema_by_id(side.reader_id))
        if side.schema_type == "PROTOBUF":
            return ProtobufDecoder(
                writer, self._client.parsed_schema_by_id(side.reader_id), side.data_type, side.reader_id
            )
        return json_decoder(side.data_type)


def _schema_id(payload: bytes) -> int | None:
    if len(payload) < 5 or payload[0] != 0:
        return None
    schema_id = int.from_bytes(payload[1:5], "big")
    return schema_id if schema_id <= MAX_SCHEMA_ID else None

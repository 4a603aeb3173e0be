"""`kctl produce TOPIC`: one record per input line, from a shell pipe or a file, optionally in
transactions; a line is a value (or key and value), or a JSON record as `kctl consume --json`
writes them. The command declares the options; kctl.produce.producing does the work."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kctl.produce import producing, schemaencoding
from kctl.produce.producing import InputFormat, ProduceRequest
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.options import (
    Acks,
    AcksOption,
    Compression,
    CompressionOption,
    DeliveryTimeout,
    SchemaRegistryUrl,
    TransactionalId,
)


@connection_options(timeout=DeliveryTimeout)
def produce(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to produce to.", show_default=False)],
    key: Annotated[
        str | None, typer.Option("--key", "-k", show_default=False, help="The same key for every record.")
    ] = None,
    key_delimiter: Annotated[
        str | None,
        typer.Option(
            "--key-delimiter",
            "-K",
            metavar="DELIM",
            show_default=False,
            help="Split each line at the first DELIM: key before, value after (as kcat -K).",
        ),
    ] = None,
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header",
            "-H",
            metavar="KEY=VALUE",
            show_default=False,
            help="Header added to every record (repeatable).",
        ),
    ] = None,
    partition: Annotated[
        int | None,
        typer.Option(
            "--partition",
            "-p",
            min=0,
            show_default=False,
            help="Produce to this partition. Default: the record's own with --input-format json, "
            "else by key (Kafka's murmur2), spread when keyless.",
        ),
    ] = None,
    input_format: Annotated[
        InputFormat,
        typer.Option(
            "--input-format",
            "-J",
            help="text: each line is a value (or key and value, with -K). json: each line is a JSON "
            "record as `kctl consume --json` writes them, with its key, headers, partition and "
            "timestamp (see below).",
        ),
    ] = InputFormat.TEXT,
    acks: AcksOption = Acks.ALL,
    compression: CompressionOption = Compression.NONE,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            "-f",
            show_default=False,
            dir_okay=False,
            help="Read records from this file instead of stdin (with a progress bar on a terminal).",
        ),
    ] = None,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json", help="Print one JSON delivery report per record: topic, partition, offset, error."
        ),
    ] = False,
    transactional_id: TransactionalId = None,
    txn_size: Annotated[
        int | None,
        typer.Option(
            "--txn-size",
            metavar="N",
            show_default=False,
            help="With --transactional-id: commit every N records, and the rest at the end of the "
            "input. Default: one transaction per batch of input ready at once (what one read "
            "of the pipe or file returns plus whatever is already waiting, up to 1 MiB): about "
            "64 KiB from a fast pipe, 1 MiB from a file, each line typed on a terminal. An open "
            "transaction must commit within transaction.timeout.ms (60 s; -X to change).",
        ),
    ] = None,
    rate: Annotated[
        str | None,
        typer.Option(
            "--rate",
            metavar="N[/s]",
            show_default=False,
            help="Send at most N records per second (on average over any second), e.g. --rate 100/s.",
        ),
    ] = None,
    value_schema: schemaencoding.ValueSchemaFile = None,
    value_schema_id: schemaencoding.ValueSchemaId = None,
    value_subject: schemaencoding.ValueSubject = None,
    key_schema: schemaencoding.KeySchemaFile = None,
    key_schema_id: schemaencoding.KeySchemaId = None,
    key_subject: schemaencoding.KeySubject = None,
    registry: SchemaRegistryUrl = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Produce one record per line of stdin (or --file); the input is read as raw bytes.

    Keyed records always land on the partition Kafka's Java client would pick. Ends with
    "N records produced to TOPIC, M failed" on stderr and exits non-zero if any failed.

    A record not acknowledged within --timeout ends the run: the records still in flight
    count as failed. With --acks all (the default) a partition whose ISR is below the
    topic's min.insync.replicas is refused with NOT_ENOUGH_REPLICAS (exit 6), before
    sending when it is so at the start.

    With --transactional-id the records go in transactions (see --txn-size), and the summary
    adds "T transactions committed (R records), A aborted". A refused record, a failed
    delivery or Ctrl-C aborts the open transaction: none of its records become visible to
    read_committed consumers (`kctl consume`'s default), while committed ones stay.

    With --input-format json (-J json) each line is a JSON object as `kctl consume --json`
    writes them, so `kctl consume a --json -e | kctl produce b -J json` copies topic a to b:
    keys, values, headers (in order, repeated names kept), partitions (unless -p) and
    timestamps (as CreateTime).

    A JSON record needs "value" (null for a tombstone). "key", "headers" (a list of
    {"key": NAME, "value": TEXT} objects), "partition" and "timestamp" (ms since the epoch)
    may be null or missing: then no key, no headers, the partitioner picks, the time of
    sending (as for 0 and -1). Other fields ("topic", "offset") are ignored. A string stands
    for its UTF-8 bytes, or, with "key_encoding": "base64" beside it ("value_encoding" for a
    value, also in a header's object), for the bytes its base64 encodes.

    A line that is not such a record stops the input: the records before it are delivered
    (with --transactional-id, committed), then kctl names the line and exits 5.

    With a value schema (--value-schema FILE, --value-schema-id ID or --value-subject
    SUBJECT; keys alike) each value is a JSON document, encoded in Confluent's wire format
    with the schema from the schema registry (docs/schemas.md). A document that does not fit
    the schema stops the input the same way, naming its line and field.
    """
    producing.produce(
        ProduceRequest(
            topic=topic,
            key=key,
            key_delimiter=key_delimiter,
            headers=tuple(header or ()),
            partition=partition,
            input_format=input_format,
            acks=acks,
            compression=compression,
            file=file,
            json_output=json_output,
            transactional_id=transactional_id,
            txn_size=txn_size,
            rate=rate,
            value_schema=schemaencoding.SchemaChoice("value", value_schema, value_schema_id, value_subject),
            key_schema=schemaencoding.SchemaChoice("key", key_schema, key_schema_id, key_subject),
            registry=registry,
            options=options,
        )
    )

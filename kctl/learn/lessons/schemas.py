"""Schemas and compatibility: producers and consumers agree on a record format through the
schema registry, never through the broker, which stores bytes. A producer adds a field with a
default (accepted: BACKWARD compatible), then one without (refused: a consumer on the new
schema could not read the records already written); a consumer built on the first version
reads every record throughout, by Avro schema resolution.

The learner's side is the real `kctl` commands, run as a learner types them after `kctl
cluster up`, so the refusal is shown as the learner meets it: kctl's one-line error, exit 6.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastavro
from confluent_kafka import TopicPartition
from fastavro.read import SchemaResolutionError

from kctl.learn.lab import CLIENT_TIMEOUT_S, Lab, LessonFailure
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show
from schemaregistry.client import RegistryClient, RegistryError
from schemaregistry.wire import BadPayload, unframe

TOPIC = "orders"
SUBJECT = f"{TOPIC}-value"  # TopicNameStrategy, as kctl produce and Confluent's serializers name it
COMMAND_TIMEOUT_S = 60.0
V1_FIELDS = [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"}]
CURRENCY = {"name": "currency", "type": "string", "default": "EUR"}
CUSTOMER = {"name": "customer", "type": "string"}  # no default: what BACKWARD refuses


def _order(fields: list[dict[str, str]]) -> dict[str, Any]:
    return {"type": "record", "name": "Order", "namespace": "shop", "fields": fields}


SCHEMAS = {
    1: _order(V1_FIELDS),
    2: _order([*V1_FIELDS, CURRENCY]),
    3: _order([*V1_FIELDS, CURRENCY, CUSTOMER]),
}
ORDERS: dict[int, list[dict[str, Any]]] = {
    1: [{"id": "o-1", "amount": 12.5}, {"id": "o-2", "amount": 3.0}, {"id": "o-3", "amount": 40.0}],
    2: [{"id": "o-4", "amount": 7.25, "currency": "USD"}, {"id": "o-5", "amount": 19.9, "currency": "GBP"}],
    3: [{"id": "o-6", "amount": 5.0, "currency": "EUR", "customer": "ada"}],
}


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


# -- the learner's commands ------------------------------------------------------------------


@dataclass(frozen=True)
class Typed:
    """A kctl command as the learner types it, and how it answered."""

    line: str
    code: int
    said: str  # its last line: kctl's messages and errors go to stderr, data to stdout

    def __str__(self) -> str:
        return f"`$ {self.line}` → {self.said} (exit {self.code})"


def _folder(lab: Lab) -> Path:
    """Where the learner's files are (schemas, JSON lines): beside the lab's cluster, so they
    go with it."""
    return lab.dir.parent / "shop"


def _write_files(lab: Lab) -> None:
    folder = _folder(lab)
    folder.mkdir(exist_ok=True)
    for version, schema in SCHEMAS.items():
        (folder / f"order-v{version}.avsc").write_text(json.dumps(schema))
        lines = "".join(json.dumps(order) + "\n" for order in ORDERS[version])
        (folder / f"orders-v{version}.jsonl").write_text(lines)


def _kctl(lab: Lab, line: str) -> Typed:
    """Run `kctl ...` (perhaps `< FILE`) as typed after `kctl cluster up` printed its exports:
    KCTL_BOOTSTRAP and KCTL_SCHEMA_REGISTRY_URL set, in the folder of the learner's files."""
    words = shlex.split(line)
    source = words[words.index("<") + 1] if "<" in words else None
    argv = words[: words.index("<")] if source else words
    env = {
        **os.environ,
        "KCTL_BOOTSTRAP": lab.bootstrap,
        "KCTL_SCHEMA_REGISTRY_URL": lab.schema_registry(),
        "KCTL_HOME": str(lab.dir),  # never the learner's own cluster in ~/.kctl
    }
    stdin = (_folder(lab) / source).read_bytes() if source else b""
    try:
        done = subprocess.run(
            [sys.executable, "-m", *argv],  # python -m kctl ...: this kctl, whatever PATH says
            input=stdin,
            cwd=_folder(lab),
            env=env,
            capture_output=True,
            timeout=COMMAND_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise LessonFailure(f"`{line}` did not finish within {COMMAND_TIMEOUT_S:g}s") from None
    said = (done.stderr.decode().strip() or done.stdout.decode().strip()).splitlines() or [""]
    return Typed(line, done.returncode, said[-1])


def _succeeded(typed: Typed) -> Typed:
    """A command the lesson needs to work: if it fails, the lesson stops, saying why."""
    if typed.code != 0:
        raise LessonFailure(f"{typed.line} failed: {typed.said} (exit {typed.code})")
    return typed


# -- consumers, old and new -------------------------------------------------------------------


def read_as(registry: RegistryClient, payload: bytes, reader: dict[str, Any]) -> dict[str, Any]:
    """A record's value as a consumer whose own schema is `reader` sees it: the writer's schema
    is fetched by the id the record carries and resolved to the reader's (Avro schema
    resolution: a field only the writer has is skipped, a field only the reader has takes
    the reader's default, or cannot be read)."""
    schema_id, _, body = unframe(payload)
    writer = fastavro.parse_schema(json.loads(registry.schema_by_id(schema_id)["schema"]))
    value = fastavro.schemaless_reader(io.BytesIO(body), writer, fastavro.parse_schema(reader))
    if not isinstance(value, dict):
        raise BadPayload(f"not an Order record: {value!r}")
    return value


@dataclass
class OldConsumer:
    """An application built when orders were v1 and never redeployed: it decodes every record
    with v1 as its own schema, whichever schema wrote it. One consumer for the whole lesson,
    reading on from where it was."""

    lab: Lab
    registry: RegistryClient
    orders: dict[int, dict[str, Any]] = field(default_factory=dict)  # by offset
    failures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.consumer = self.lab.consumer(group_id="billing")
        self.consumer.assign([TopicPartition(TOPIC, 0, 0)])
        self.lab.on_close(self.consumer.close)

    def read_to(self, end: int) -> list[dict[str, Any]]:
        """Read up to offset `end` (the topic's end now): the orders read this time."""
        before = len(self.orders)
        self.lab.wait(lambda: self._poll() >= end, f"the old consumer to read up to offset {end}")
        return list(self.orders.values())[before:]

    def _poll(self) -> int:
        for message in self.consumer.consume(100, 0.2):
            offset, value = message.offset(), message.value()
            if message.error() is not None or offset is None or value is None:
                continue
            try:
                self.orders[offset] = read_as(self.registry, value, SCHEMAS[1])
            except (SchemaResolutionError, BadPayload, RegistryError) as exc:
                self.failures.append(f"offset {offset}: {exc}")
                self.orders[offset] = {}
        return len(self.orders)


def _reader_of_everything(lab: Lab, version: int) -> tuple[list[dict[str, Any]], str | None]:
    """A new consumer on `version` reading the topic from its start: the orders it read, and
    why it stopped if it could not read one."""
    registry = RegistryClient(lab.schema_registry(), timeout=CLIENT_TIMEOUT_S)
    orders: list[dict[str, Any]] = []
    for message in lab.read(TOPIC):
        try:
            orders.append(read_as(registry, message.value() or b"", SCHEMAS[version]))
        except SchemaResolutionError as exc:
            return orders, f"offset {message.offset()}: {exc}"
    return orders, None


def _end(lab: Lab) -> int:
    return int(lab.partition(TOPIC)["high_watermark"])


def _wait_end(lab: Lab, end: int) -> None:
    lab.wait(lambda: _end(lab) == end, f"{TOPIC} to end at {end}")


# -- the experiments ------------------------------------------------------------------------


def _start(lab: Lab) -> str:
    lab.create_topic(TOPIC, 1, 1)
    _write_files(lab)
    registered = _succeeded(_kctl(lab, f"kctl schema register {SUBJECT} order-v1.avsc"))
    produced = _succeeded(_kctl(lab, f"kctl produce {TOPIC} --value-schema order-v1.avsc < orders-v1.jsonl"))
    _wait_end(lab, 3)
    old = OldConsumer(lab, RegistryClient(lab.schema_registry(), timeout=CLIENT_TIMEOUT_S))
    lab.seen["old"] = old
    read = old.read_to(3)
    return f"{registered}; {produced}; the old consumer (its schema: v1) read {_list(read)}"


def _list(orders: list[dict[str, Any]]) -> str:
    return ", ".join(_compact(order) for order in orders) or "nothing"


def _add_with_default(lab: Lab) -> str:
    registered = _kctl(lab, f"kctl schema register {SUBJECT} order-v2.avsc")
    lab.seen["v2"] = registered
    produced = _succeeded(_kctl(lab, f"kctl produce {TOPIC} --value-schema order-v2.avsc < orders-v2.jsonl"))
    _wait_end(lab, 5)
    lab.seen["old_v2"] = lab.seen["old"].read_to(5)
    lab.seen["new_v2"], _ = _reader_of_everything(lab, 2)
    return (
        f"{registered}; {produced}; the old consumer read on: {_list(lab.seen['old_v2'])}; "
        f"a new consumer on v2 read the first order as {_compact(lab.seen['new_v2'][0])}"
    )


def _v2_accepted(lab: Lab) -> Observed:
    typed: Typed = lab.seen["v2"]
    old = lab.seen["old_v2"]
    held = typed.code == 0 and "version 2" in typed.said and old == [_without_currency(o) for o in ORDERS[2]]
    return Observed(held, f"{typed.said} (exit {typed.code}); the old consumer read {_list(old)}")


def _without_currency(order: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in order.items() if k != "currency"}


def _defaults_filled(lab: Lab) -> Observed:
    first = lab.seen["new_v2"][: len(ORDERS[1])]
    held = first == [{**order, "currency": "EUR"} for order in ORDERS[1]]
    return Observed(held, f"the v1 orders read with v2: {_list(first)}")


def _add_without_default(lab: Lab) -> str:
    end = _end(lab)
    refused = _kctl(lab, f"kctl produce {TOPIC} --value-schema order-v3.avsc < orders-v3.jsonl")
    registry = RegistryClient(lab.schema_registry(), timeout=CLIENT_TIMEOUT_S)
    lab.seen["status"] = _registry_answer(registry)
    lab.settle()
    lab.seen.update(v3=refused, end_before=end, end_after=_end(lab), versions=registry.versions(SUBJECT))
    return f"{refused}; the registry's own answer to registering v3: HTTP {lab.seen['status']}"


def _registry_answer(registry: RegistryClient) -> int:
    """The HTTP status the registry gives v3 itself (behind kctl's exit code): 200 if accepted."""
    try:
        registry.register(SUBJECT, json.dumps(SCHEMAS[3]))
    except RegistryError as exc:
        return exc.status
    return 200


def _v3_refused(lab: Lab) -> Observed:
    typed: Typed = lab.seen["v3"]
    versions, before, after = lab.seen["versions"], lab.seen["end_before"], lab.seen["end_after"]
    named = "'customer'" in typed.said
    held = (
        typed.code == 6
        and lab.seen["status"] == 409
        and typed.said.startswith("kctl: error: ")
        and named
        and versions == [1, 2]
        and before == after
    )
    return Observed(
        held,
        f"exit {typed.code} (HTTP {lab.seen['status']}), "
        f"the reason naming {'customer' if named else 'no field'}; "
        f"{SUBJECT} has versions {versions}; {TOPIC} ended at {before} before and {after} after",
    )


def _forward(lab: Lab) -> str:
    level = _succeeded(_kctl(lab, f"kctl schema config {SUBJECT} --set FORWARD"))
    produced = _kctl(lab, f"kctl produce {TOPIC} --value-schema order-v3.avsc < orders-v3.jsonl")
    lab.seen["forward"] = produced
    if produced.code == 0:
        _wait_end(lab, 6)
        lab.seen["old_v3"] = lab.seen["old"].read_to(6)
    registry = RegistryClient(lab.schema_registry(), timeout=CLIENT_TIMEOUT_S)
    lab.seen["versions_forward"] = registry.versions(SUBJECT)
    lab.seen["new_v3"], lab.seen["v3_stuck"] = _reader_of_everything(lab, 3)
    return (
        f"{level}; {produced}; the old consumer read on: {_list(lab.seen.get('old_v3', []))}; a new "
        f"consumer on v3 reading from the start: {lab.seen['v3_stuck'] or 'read everything'}"
    )


def _forward_accepted(lab: Lab) -> Observed:
    typed: Typed = lab.seen["forward"]
    stuck = lab.seen["v3_stuck"]
    held = (
        typed.code == 0 and lab.seen["versions_forward"] == [1, 2, 3] and bool(stuck) and "customer" in stuck
    )
    return Observed(
        held,
        f"v3 produced (exit {typed.code}), {SUBJECT} has versions {lab.seen['versions_forward']}; "
        f"the consumer on v3 stopped at {stuck}",
    )


def _old_read_everything(lab: Lab) -> Observed:
    old: OldConsumer = lab.seen["old"]
    end = _end(lab)
    ids = [order.get("id") for _, order in sorted(old.orders.items())]
    expected = [order["id"] for version in (1, 2, 3) for order in ORDERS[version]]
    held = sorted(old.orders) == list(range(end)) and ids == expected and not old.failures
    return Observed(
        held,
        f"the old consumer read {len(old.orders)} of the {end} records ({', '.join(map(str, ids))}), "
        f"each with its v1 schema; {len(old.failures)} it could not read{_failures(old)}",
    )


def _failures(old: OldConsumer) -> str:
    return f": {'; '.join(old.failures)}" if old.failures else ""


LESSON = Lesson(
    name="schemas",
    title="Schemas: producers and consumers agree on a format",
    summary="a field with a default is accepted, one without is refused (BACKWARD); an old consumer reads on",
    seeds=("004", "000", "002"),
    brokers=1,
    broker_config={},
    steps=(
        Narrate(
            "The broker stores a record's value as bytes and never looks inside. Producers and "
            "consumers must agree on what the bytes mean, and a **schema registry** holds that "
            f"agreement: the subject `{SUBJECT}` (the topic's name and `-value`) keeps versions of an "
            "Avro schema, and each new version must be **compatible** with the earlier ones as the "
            "subject's level says (BACKWARD by default). `kctl produce --value-schema FILE` registers "
            "the schema and writes each record as a 0 byte, the schema's id and the Avro body "
            "(Confluent's wire format). This lesson's cluster runs a registry beside its broker, as "
            "`kctl cluster up` does; the commands are typed as after it, with KCTL_BOOTSTRAP and "
            f"KCTL_SCHEMA_REGISTRY_URL exported. Version 1, `order-v1.avsc`: `{_compact(SCHEMAS[1])}`. "
            "An **old consumer** is started with v1 as its own schema and is never redeployed."
        ),
        Experiment("register v1, produce three orders with it, and read them", _start),
        Show("three orders in the topic: offsets to the broker, not orders", TOPIC),
        Ask(
            f"The producer adds a field with a default, `{_compact(CURRENCY)}` (v2), registers v2 and "
            "produces orders with a currency. The old consumer still decodes with v1. What happens?",
            (
                "The registry refuses v2: the old consumer does not know currency.",
                "v2 is accepted; the old consumer reads the new orders without their currency, a "
                "field its v1 does not have.",
                "v2 is accepted, but the old consumer fails on every new order until it is redeployed.",
                "The broker refuses the new records: their schema id is not the one the topic started with.",
            ),
            "b",
        ),
        Experiment("register v2, produce two orders with a currency, and read on", _add_with_default),
        Show(
            "the registry's own topic _schemas: each version a record, committed in a transaction "
            "(a commit marker after each)",
            "_schemas",
            brokers=False,
        ),
        Check("v2 was accepted, and the old consumer read the new orders with its v1 schema", _v2_accepted),
        Check("a consumer on v2 reads the v1 orders with currency EUR, the default", _defaults_filled),
        Explain(
            "In Kafka, producers and consumers are fully decoupled and agnostic of each other, which is "
            "a key design element to achieve the high scalability that Kafka is known for. For "
            "example, producers never need to wait for consumers.",
            "004",
            "Schemas keep them decoupled when the format changes. Each record carries the id of the "
            "schema it was written with; a consumer fetches that writer's schema from the registry "
            "and resolves it against its own (Avro schema resolution): a field only the writer has "
            "is skipped, a field only the reader has takes the reader's default. So the producer "
            "moved to v2 without waiting for the old consumer, and a consumer moved to v2 reads the "
            "v1 orders with currency EUR.",
        ),
        Ask(
            f"Next the producer adds `{_compact(CUSTOMER)}`, with no default (v3), and runs `kctl produce "
            f"{TOPIC} --value-schema order-v3.avsc`. The subject is at BACKWARD. What happens?",
            (
                "v3 is accepted: the old consumer skips customer, as it skipped currency.",
                "The registry refuses v3 and kctl stops with exit 6, writing nothing: a consumer on v3 "
                "could not read the orders already in the topic, which have no customer.",
                "v3 is accepted, and the orders already in the topic get an empty customer.",
                "The broker refuses the records, since the old consumer could not read them.",
            ),
            "b",
        ),
        Experiment("produce with v3, which adds customer without a default", _add_without_default),
        Show("nothing written by the refused producer", TOPIC, brokers=False),
        Check(
            "v3 was refused (exit 6) with the registry's reason naming customer, and nothing was written",
            _v3_refused,
        ),
        Explain(
            "Messages once written to partitions are immutable and cannot be updated.",
            "000",
            "That is why BACKWARD, the registry's default level, refuses v3: the v1 and v2 orders stay "
            "in the topic as they were written, and a consumer upgraded to v3 must still read them. "
            "BACKWARD checks the new schema as the reader of records written with the latest "
            "version; those have no customer and v3 gives none by default "
            "(READER_FIELD_MISSING_DEFAULT_VALUE, the registry's 409 answer, kctl's exit 6). With a "
            'default, or as `["null", "string"]` with default null, v3 is accepted. BACKWARD lets '
            "consumers upgrade first; BACKWARD_TRANSITIVE checks every earlier version, not only "
            "the latest.",
        ),
        Ask(
            f"The team sets the subject to FORWARD (`kctl schema config {SUBJECT} --set FORWARD`) and "
            "produces with v3 again. What happens?",
            (
                "Still refused: a field without a default is never compatible.",
                "Accepted: FORWARD asks that consumers on the previous version read the new records, "
                "and they skip customer; what breaks is a consumer on v3 reading the old orders.",
                "Accepted, and every consumer, old or new, can read every order.",
            ),
            "b",
        ),
        Experiment("set FORWARD, produce with v3, and read with the old consumer and a v3 one", _forward),
        Show("the v3 order appended like any other bytes", TOPIC, brokers=False),
        Check(
            "at FORWARD v3 was accepted, and a consumer on v3 cannot read the first order", _forward_accepted
        ),
        Check("the old consumer read every record, whichever schema wrote it", _old_read_everything),
        Explain(
            "Dumb broker, smart consumer: Kafka doesn't track what each consumer has read. Instead, "
            "consumers track their own offsets.",
            "002",
            "The broker is as dumb about formats: it appended the v3 order as it appends any bytes "
            "and never looked at a schema id. Which readers keep working is the clients' contract, "
            "kept by the registry's level: BACKWARD (the default) lets consumers upgrade first, "
            "FORWARD producers first (the old consumer read the v3 order; a consumer on v3 cannot "
            "read the first one), FULL either (only fields with defaults come and go), NONE checks "
            "nothing; the `_TRANSITIVE` levels check every earlier version, not only the latest.",
        ),
    ),
)

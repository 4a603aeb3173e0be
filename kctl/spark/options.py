"""The options of the `kctl` format, parsed and checked once, with Spark's Kafka names.

Spark hands options over as strings in a case-insensitive map; everything else in this
package works on the typed result, so a bad option fails when the query is defined, with a
message naming the option, instead of deep inside an executor.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from kctl.spark.formats import RegistryFormats, registry_formats
from kctl.spark.offsets import EARLIEST, LATEST, Offsets, TopicPartition, parse, parse_assign

CLIENT_PREFIX = "kafka."
NAMES = {EARLIEST: "earliest", LATEST: "latest"}
STRATEGIES = ("assign", "subscribe", "subscribepattern")
# Rejected as Spark rejects them: the source tracks offsets itself, and records are bytes.
_FORBIDDEN_CLIENT = {
    "auto.offset.reset": "set startingOffsets instead",
    "enable.auto.commit": "offsets are tracked in Spark's checkpoint, never committed",
    "key.deserializer": "keys are always bytes; cast them in the query",
    "value.deserializer": "values are always bytes; cast them in the query",
    "key.serializer": "write keys as string or binary columns",
    "value.serializer": "write values as string or binary columns",
    "interceptor.classes": "interceptors are a Java client feature",
}


@dataclass(frozen=True)
class Subscription:
    """Which partitions to read: exactly one of Spark's three strategies."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def wants(self, topic: str) -> bool:
        if self.pattern is not None:
            # Like the Java consumer, patterns never match internal topics (__consumer_offsets).
            return not topic.startswith("__") and re.fullmatch(self.pattern, topic) is not None
        if self.assigned:
            return any(tp.topic == topic for tp in self.assigned)
        return topic in self.topics


@dataclass(frozen=True)
class Position:
    """Where reading starts or stops in every partition.

    kind is "earliest" or "latest" (all partitions), "offsets" (per partition, -2 earliest,
    -1 latest), "timestamps" (per partition) or "timestamp" (one for all partitions).
    """

    kind: str
    offsets: Offsets = field(default_factory=dict)
    timestamp: int | None = None


@dataclass(frozen=True)
class SourceOptions:
    client: dict[str, str]
    subscription: Subscription
    starting: Position
    ending: Position
    no_match_latest: bool = False  # startingOffsetsByTimestampStrategy=latest
    fail_on_data_loss: bool = True
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    include_headers: bool = False
    read_committed: bool = False
    poll_timeout_s: float = 120.0
    formats: RegistryFormats | None = None  # key.format, value.format and the registry


@dataclass(frozen=True)
class SinkOptions:
    client: dict[str, str]
    topic: str | None = None
    formats: RegistryFormats | None = None


def source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Parse a reader's options; ValueError with the option's name when one is wrong."""
    opts = {k.lower(): v for k, v in options.items()}
    if streaming and (
        "endingoffsets" in opts or "endingtimestamp" in opts or "endingoffsetsbytimestamp" in opts
    ):
        raise ValueError("ending offsets are not valid in streaming queries")
    client = client_config(opts, group_prefix=opts.get("groupidprefix", "spark-kafka-source"))
    isolation = client.get("isolation.level", "read_uncommitted")
    if isolation not in ("read_committed", "read_uncommitted"):
        raise ValueError(
            f"invalid kafka.isolation.level {isolation!r}: use read_committed or read_uncommitted"
        )
    client["isolation.level"] = isolation
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise ValueError(f"invalid startingOffsetsByTimestampStrategy {strategy!r}: use error or latest")
    return SourceOptions(
        client=client,
        subscription=_subscription(opts),
        starting=_position(opts, "starting", "latest" if streaming else "earliest", streaming),
        ending=_position(opts, "ending", "latest", streaming),
        no_match_latest=strategy == "latest",
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        max_offsets_per_trigger=_positive(opts, "maxOffsetsPerTrigger"),
        min_partitions=_positive(opts, "minPartitions"),
        include_headers=_bool(opts, "includeHeaders", False),
        read_committed=isolation == "read_committed",
        poll_timeout_s=(_positive(opts, "kafkaConsumer.pollTimeoutMs") or 120_000) / 1000,
        formats=registry_formats(opts),
    )


def sink_options(options: Mapping[str, str], exactly_once: bool) -> SinkOptions:
    """A writer's options; the exactly-once streaming sink also insists on acks=all and
    idempotence, without which a delivered record could be invisible to its replay check
    or written twice by the client's own retries."""
    opts = {k.lower(): v for k, v in options.items()}
    client = client_config(opts)
    if exactly_once and client.get("acks", "all").lower() not in ("all", "-1"):
        raise ValueError("the kctl streaming sink needs kafka.acks=all (the default)")
    if exactly_once and client.get("enable.idempotence", "true").lower() != "true":
        raise ValueError("the kctl streaming sink needs kafka.enable.idempotence=true (the default)")
    return SinkOptions(client=client, topic=opts.get("topic") or None, formats=registry_formats(opts))


def wants_headers(options: Mapping[str, str]) -> bool:
    return _bool(lowered(options), "includeHeaders", False)


def subscription(options: Mapping[str, str]) -> Subscription:
    """The subscription alone, for what depends on it before reading (subjects named after topics)."""
    return _subscription(lowered(options))


def lowered(options: Mapping[str, str]) -> dict[str, str]:
    """Options with lower-case names: Spark's option names are case-insensitive."""
    return {k.lower(): v for k, v in options.items()}


def client_config(opts: Mapping[str, str], group_prefix: str | None = None) -> dict[str, str]:
    """librdkafka settings from the `kafka.*` options, checked against Spark's rules."""
    client = {k[len(CLIENT_PREFIX) :]: v for k, v in opts.items() if k.startswith(CLIENT_PREFIX)}
    if not client.get("bootstrap.servers"):
        raise ValueError("option kafka.bootstrap.servers is required")
    for name, why in _FORBIDDEN_CLIENT.items():
        if name in client:
            raise ValueError(f"option kafka.{name} is not supported: {why}")
    if group_prefix is not None and "group.id" not in client:
        # One group per query, as Spark does; librdkafka needs one even for assign().
        client["group.id"] = f"{group_prefix}-{uuid.uuid4()}"
    return client


def _subscription(opts: Mapping[str, str]) -> Subscription:
    given = [s for s in STRATEGIES if opts.get(s)]
    if len(given) != 1:
        raise ValueError(
            "set exactly one of the options assign, subscribe, subscribePattern"
            + (f" (got {', '.join(given)})" if given else "")
        )
    value = opts[given[0]]
    if given[0] == "assign":
        return Subscription(assigned=tuple(parse_assign(value)))
    if given[0] == "subscribepattern":
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid subscribePattern {value!r}: {exc}") from None
        return Subscription(pattern=value)
    topics = tuple(t.strip() for t in value.split(",") if t.strip())
    if not topics:
        raise ValueError(f"invalid subscribe {value!r}: expected topic names separated by commas")
    return Subscription(topics=topics)


def _position(opts: Mapping[str, str], which: str, default: str, streaming: bool) -> Position:
    """starting*/ending* options; the timestamp forms take precedence, as in Spark."""
    if opts.get(f"{which}timestamp"):
        return Position("timestamp", timestamp=_int(opts, f"{which}Timestamp"))
    if opts.get(f"{which}offsetsbytimestamp"):
        return Position("timestamps", parse(opts[f"{which}offsetsbytimestamp"], f"{which}OffsetsByTimestamp"))
    text = opts.get(f"{which}offsets", default).strip()
    if text.lower() in ("earliest", "latest"):
        if (which, text.lower()) == ("ending", "earliest"):
            raise ValueError("endingOffsets cannot be earliest")
        if (which, text.lower(), streaming) == ("starting", "latest", False):
            raise ValueError("startingOffsets cannot be latest for batch queries")
        return Position(text.lower())
    offsets = parse(text, f"{which}Offsets")
    allowed = {LATEST} if which == "ending" else {EARLIEST, LATEST} if streaming else {EARLIEST}
    bad = [tp for tp, o in offsets.items() if o < 0 and o not in allowed]
    if bad:
        raise ValueError(
            f"invalid {which}Offsets for {bad[0].topic}/{bad[0].partition}: "
            f"{offsets[bad[0]]} (use offsets >= 0"
            + "".join(f", {o} {NAMES[o]}" for o in sorted(allowed))
            + ")"
        )
    return Position("offsets", offsets)


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    value = opts.get(name.lower())
    if value is None:
        return default
    if value.strip().lower() not in ("true", "false"):
        raise ValueError(f"invalid {name} {value!r}: use true or false")
    return value.strip().lower() == "true"


def _int(opts: Mapping[str, str], name: str) -> int:
    text = opts[name.lower()]
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"invalid {name} {text!r}: expected an integer") from None


def _positive(opts: Mapping[str, str], name: str) -> int | None:
    if opts.get(name.lower()) is None:
        return None
    value = _int(opts, name)
    if value <= 0:
        raise ValueError(f"invalid {name} {value}: must be positive")
    return value

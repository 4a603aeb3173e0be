"""A v2 consumer instance's settings: what `POST /consumers/{group}` may ask for, checked as
Confluent's proxy checks it (42204 when a value is wrong), and the librdkafka settings an
instance's consumer is made with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from restproxy import errors
from restproxy.consumer_records import FORMATS
from restproxy.context import Settings

MAX_REQUEST_TIMEOUT_MS = 30_000  # the most an instance's consumer.request.timeout.ms may ask for
QUEUED_KBYTES = 2048  # librdkafka's prefetch buffer per instance (its default is 64 MiB)
OFFSET_RESETS = {"earliest": "earliest", "latest": "latest", "none": "error"}  # Kafka's -> librdkafka's


@dataclass(frozen=True)
class InstanceConfig:
    """What `POST /consumers/{group}` asked for, checked (see `instance_config`)."""

    name: str | None = None
    format: str = "binary"
    auto_offset_reset: str | None = None
    auto_commit: bool | None = None  # None: Kafka's default, on
    fetch_min_bytes: int = -1  # -1: a fetch waits for its timeout or max_bytes
    request_timeout_ms: int | None = None  # None: the proxy's consumer.request.timeout.ms


def instance_config(
    name: str | None,
    embedded_format: str | None,
    auto_offset_reset: str | None,
    auto_commit: str | bool | None,
    fetch_min_bytes: str | int | None,
    request_timeout_ms: str | int | None,
) -> InstanceConfig:
    """The request's settings checked as Confluent's proxy checks them: 42204 if one is wrong."""
    if name is not None and (not name or "/" in name or len(name) > 249):
        raise errors.invalid_consumer_config(f"name {name!r} must be 1 to 249 characters, without '/'")
    chosen = (embedded_format or "binary").lower()
    if chosen not in FORMATS:
        raise errors.invalid_consumer_config(f"format {embedded_format!r} is not one of {', '.join(FORMATS)}")
    if auto_offset_reset is not None and auto_offset_reset.lower() not in OFFSET_RESETS:
        raise errors.invalid_consumer_config(
            f"auto.offset.reset {auto_offset_reset!r} is not one of {', '.join(OFFSET_RESETS)}"
        )
    return InstanceConfig(
        name,
        chosen,
        None if auto_offset_reset is None else OFFSET_RESETS[auto_offset_reset.lower()],
        _boolean("auto.commit.enable", auto_commit),
        _integer("fetch.min.bytes", fetch_min_bytes, -1) if fetch_min_bytes is not None else -1,
        _integer("consumer.request.timeout.ms", request_timeout_ms, 0)
        if request_timeout_ms is not None
        else None,
    )


def _boolean(setting: str, value: str | bool | None) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise errors.invalid_consumer_config(f"{setting} {value!r} is not true or false")


def _integer(setting: str, value: str | int, least: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise errors.invalid_consumer_config(f"{setting} {value!r} is not an integer") from None
    if number < least:
        raise errors.invalid_consumer_config(f"{setting} {value!r} is less than {least}")
    return number


def request_timeout_s(config: InstanceConfig, settings: Settings) -> float:
    """How long the instance's fetches wait at most: its own setting if it has one, no longer
    than MAX_REQUEST_TIMEOUT_MS (or the proxy's own, if an operator set that longer)."""
    default_ms = settings.consumer_request_timeout_ms
    return min(config.request_timeout_ms or default_ms, max(MAX_REQUEST_TIMEOUT_MS, default_ms)) / 1000


def kafka_config(
    base: dict[str, Any], group: str, name: str, config: InstanceConfig, settings: Settings
) -> dict[str, Any]:
    """librdkafka's settings for the instance's consumer, on top of the user's client settings."""
    kafka = {
        **base,
        "group.id": group,
        "client.id": name,
        "enable.auto.offset.store": False,  # the instance stores what it gave out
        "enable.partition.eof": False,
        "queued.max.messages.kbytes": QUEUED_KBYTES,
        "fetch.max.bytes": QUEUED_KBYTES * 1024,  # one fetch response no larger than the buffer
        # librdkafka leaves the group when not polled for this long: an idle instance stays in it
        "max.poll.interval.ms": min(max(300_000, settings.consumer_instance_timeout_ms + 60_000), 86_400_000),
    }
    if config.auto_offset_reset is not None:
        kafka["auto.offset.reset"] = config.auto_offset_reset
    if config.auto_commit is not None:
        kafka["enable.auto.commit"] = config.auto_commit
    return kafka

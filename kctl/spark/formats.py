"""The schema registry options of the `kctl` format: which of key and value are records in
Confluent's wire format, of which schema type, under which subject, at which registry.

    .option("value.format", "avro")             # or protobuf, json-schema; key.format alike
    .option("schema.registry.url", "http://127.0.0.1:8081")
    .option("value.subject", "orders-value")    # default TOPIC-value (TopicNameStrategy)

Parsed with the other options (kctl.spark.options), so a wrong one fails when the query is
defined; without key.format and value.format nothing here applies and no registry is asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FORMATS = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}
SIDES = ("key", "value")


@dataclass(frozen=True)
class SideFormat:
    """How one side (key or value) is encoded."""

    side: str  # "key" or "value"
    schema_type: str  # the registry's name of the type: AVRO, PROTOBUF or JSON
    subject: str | None  # None: TOPIC-key or TOPIC-value

    @property
    def option(self) -> str:
        """The option that chose it, to name in messages."""
        return f"{self.side}.format"

    def subject_for(self, topic: str | None) -> str:
        """The subject of the side's schema: the option's, else the topic's (TopicNameStrategy)."""
        if self.subject is not None:
            return self.subject
        if topic is None:
            raise ValueError(
                f"{self.option} needs {self.side}.subject here: the subject cannot be named after "
                "one topic (set the topic option, subscribe to one topic, or set the subject)"
            )
        return f"{topic}-{self.side}"


@dataclass(frozen=True)
class RegistryFormats:
    url: str
    sides: tuple[SideFormat, ...]  # the key's first
    fail_on_decode_error: bool = False  # source: failOnDecodeError
    auto_register: bool = False  # sink: auto.register.schemas


def registry_formats(opts: Mapping[str, str]) -> RegistryFormats | None:
    """The formats of lower-cased options; None when neither key.format nor value.format is set."""
    sides = tuple(side for side in (_side(opts, name) for name in SIDES) if side is not None)
    if not sides:
        return None
    url = opts.get("schema.registry.url", "").strip()
    if not url:
        raise ValueError(f"{sides[0].option} needs the option schema.registry.url")
    return RegistryFormats(
        url=url,
        sides=sides,
        fail_on_decode_error=_flag(opts, "failOnDecodeError"),
        auto_register=_flag(opts, "auto.register.schemas"),
    )


def _side(opts: Mapping[str, str], side: str) -> SideFormat | None:
    name = opts.get(f"{side}.format")
    subject = opts.get(f"{side}.subject") or None
    if name is None:
        if subject is not None:
            raise ValueError(f"{side}.subject is for {side}.format, which is not set")
        return None
    schema_type = FORMATS.get(name.strip().lower())
    if schema_type is None:
        raise ValueError(f"invalid {side}.format {name!r}: use {', '.join(FORMATS)}")
    return SideFormat(side, schema_type, subject)


def _flag(opts: Mapping[str, str], name: str) -> bool:
    value = opts.get(name.lower(), "false").strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"invalid {name} {value!r}: use true or false")
    return value == "true"

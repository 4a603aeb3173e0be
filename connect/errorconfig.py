"""Kafka Connect's error handling settings: ConnectorConfig's "Error Handling" group, which
every connector takes, and SinkConnectorConfig's dead letter queue keys, which only sinks
take (a source has no consumed record to put in a queue), with Connect's defaults, checks and
messages; and the policy a task follows, read from a validated config."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from connect.configdef import Check, ConfigKey, one_of

ERRORS = "Error Handling"
TOLERANCE = "errors.tolerance"
DLQ_TOPIC = "errors.deadletterqueue.topic.name"
DLQ_REPLICATION = "errors.deadletterqueue.topic.replication.factor"
DLQ_HEADERS = "errors.deadletterqueue.context.headers.enable"


def _key(
    name: str,
    kind: str,
    default: str,
    doc: str,
    order: int,
    display: str,
    width: str = "MEDIUM",
    check: Check | None = None,
) -> ConfigKey:
    return ConfigKey(
        name,
        kind,
        doc,
        default=default,
        importance="MEDIUM",
        group=ERRORS,
        order=order,
        width=width,
        display_name=display,
        check=check,
    )


COMMON_KEYS = [
    _key(
        "errors.retry.timeout",
        "LONG",
        "0",
        "The maximum duration in milliseconds that a failed operation will be reattempted. The default "
        "is 0, which means no retries will be attempted. Use -1 for infinite retries.",
        1,
        "Retry Timeout for Errors",
    ),
    _key(
        "errors.retry.delay.max.ms",
        "LONG",
        "60000",
        "The maximum duration in milliseconds between consecutive retry attempts. Jitter will be added "
        "to the delay once this limit is reached to prevent thundering herd issues.",
        2,
        "Maximum Delay Between Retries for Errors",
    ),
    _key(
        TOLERANCE,
        "STRING",
        "none",
        "Behavior for tolerating errors during connector operation. 'none' is the default value and "
        "signals that any error will result in an immediate connector task failure; 'all' changes the "
        "behavior to skip over problematic records.",
        3,
        "Error Tolerance",
        width="SHORT",
        check=one_of("none", "all"),
    ),
    _key(
        "errors.log.enable",
        "BOOLEAN",
        "false",
        "If true, write each error and the details of the failed operation and problematic record to "
        "the Connect application log. This is 'false' by default, so that only errors that are not "
        "tolerated are reported.",
        4,
        "Log Errors",
        width="SHORT",
    ),
    _key(
        "errors.log.include.messages",
        "BOOLEAN",
        "false",
        "Whether to include in the log the Connect record that resulted in a failure. For sink "
        "records, the topic, partition, offset, and timestamp will be logged. This is 'false' by "
        "default, which will prevent record keys, values, and headers from being written to log files.",
        5,
        "Log Error Details",
        width="SHORT",
    ),
]

DLQ_KEYS = [
    _key(
        DLQ_TOPIC,
        "STRING",
        "",
        "The name of the topic to be used as the dead letter queue (DLQ) for messages that result in an "
        "error when processed by this sink connector, or its transformations or converters. The topic "
        "name is blank by default, which means that no messages are to be recorded in the DLQ.",
        6,
        "Dead Letter Queue Topic Name",
    ),
    _key(
        DLQ_REPLICATION,
        "SHORT",
        "3",
        "Replication factor used to create the dead letter queue topic when it doesn't already exist.",
        7,
        "Dead Letter Queue Topic Replication Factor",
    ),
    _key(
        DLQ_HEADERS,
        "BOOLEAN",
        "false",
        "If true, add headers containing error context to the messages written to the dead letter "
        "queue. To avoid clashing with headers from the original record, all error context header "
        "keys, all error context header keys will start with <code>__connect.errors.</code>",
        8,
        "Enable Error Context Headers",
    ),
]


def dlq_topic_errors(config: Mapping[str, str]) -> dict[str, list[str]]:
    """SinkConnectorConfig.validate's refusal of a DLQ topic the sink itself consumes."""
    dlq = config.get(DLQ_TOPIC, "").strip()
    topics, pattern = config.get("topics", "").strip(), config.get("topics.regex", "").strip()
    found: dict[str, list[str]] = {}
    if not dlq:
        return found
    listed = list(dict.fromkeys(t.strip() for t in topics.split(",") if t.strip()))
    if dlq in listed:
        found["topics"] = [
            f"The DLQ topic '{dlq}' may not be included in the list of topics "
            f"('topics=[{', '.join(listed)}]') consumed by the connector"
        ]
    if pattern and _matches(pattern, dlq):
        found["topics.regex"] = [
            f"The DLQ topic '{dlq}' may not be matched by the regex for the topics "
            f"('topics.regex={pattern}') consumed by the connector"
        ]
    return found


def _matches(pattern: str, topic: str) -> bool:
    try:
        return re.fullmatch(pattern, topic) is not None
    except re.error:
        return False


def _flag(config: Mapping[str, str], name: str) -> bool:
    return config.get(name, "false").strip().lower() == "true"


@dataclass(frozen=True)
class ErrorPolicy:
    """What a task does with a record it cannot take, as the connector's config says."""

    tolerate_all: bool = False
    log: bool = False
    log_messages: bool = False
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60000
    dlq_topic: str = ""
    dlq_replication_factor: int = 3
    context_headers: bool = False

    @classmethod
    def of(cls, config: Mapping[str, str]) -> ErrorPolicy:
        return cls(
            tolerate_all=config.get(TOLERANCE, "none").strip() == "all",
            log=_flag(config, "errors.log.enable"),
            log_messages=_flag(config, "errors.log.include.messages"),
            retry_timeout_ms=int(config.get("errors.retry.timeout", "0")),
            retry_delay_max_ms=int(config.get("errors.retry.delay.max.ms", "60000")),
            dlq_topic=config.get(DLQ_TOPIC, "").strip(),
            dlq_replication_factor=int(config.get(DLQ_REPLICATION, "3")),
            context_headers=_flag(config, DLQ_HEADERS),
        )

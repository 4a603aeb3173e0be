"""PostgresConnector's settings, with Debezium's names and defaults, and the checks across
them that refuse a config before it runs."""

from __future__ import annotations

import re
from collections.abc import Mapping

from connect.configdef import ConfigKey, non_empty, one_of

CONNECTION, FILTERS, CONNECTOR = "Connection", "Filters", "Connector"
PLUGIN = "wal2json"  # the only logical decoding output plugin kctl decodes
SNAPSHOT_MODES = ("initial", "never")


def _plugin(value: str) -> str | None:
    if value.strip() == PLUGIN:
        return None
    return f"this worker decodes changes with the {PLUGIN} output plugin only (plugin.name={PLUGIN})"


def _regexes(value: str) -> str | None:
    for pattern in patterns(value):
        try:
            re.compile(pattern)
        except re.error as exc:
            return f"not a regular expression: {pattern} ({exc})"
    return None


KEYS = [
    ConfigKey(
        "database.hostname",
        "STRING",
        "Resolvable hostname or IP address of the database server.",
        group=CONNECTION,
        order=1,
        required=True,
    ),
    ConfigKey(
        "database.port", "INT", "Port of the database server.", group=CONNECTION, order=2, default="5432"
    ),
    ConfigKey(
        "database.user",
        "STRING",
        "Name of the database user to be used when connecting to the database.",
        group=CONNECTION,
        order=3,
        required=True,
    ),
    ConfigKey(
        "database.password",
        "PASSWORD",
        "Password of the database user to be used when connecting to the database.",
        group=CONNECTION,
        order=4,
    ),
    ConfigKey(
        "database.dbname",
        "STRING",
        "The name of the database from which the connector should capture changes",
        group=CONNECTION,
        order=5,
        required=True,
    ),
    ConfigKey(
        "topic.prefix",
        "STRING",
        "Topic prefix that identifies and provides a namespace for the particular "
        "database server/cluster is capturing changes. The topic prefix should be unique across all other "
        "connectors, since it is used as a prefix for all Kafka topic names that receive events emitted by "
        "this connector.",
        group=CONNECTOR,
        order=1,
        required=True,
        check=non_empty,
    ),
    ConfigKey(
        "table.include.list",
        "LIST",
        "The tables for which changes are to be captured: regular expressions matching schema.table",
        group=FILTERS,
        order=1,
        default="",
    ),
    ConfigKey(
        "table.exclude.list",
        "LIST",
        "A comma-separated list of regular expressions that match the "
        "fully-qualified names of tables to be excluded from monitoring",
        group=FILTERS,
        order=2,
        default="",
    ),
    ConfigKey(
        "slot.name",
        "STRING",
        "The name of the Postgres logical decoding slot created for streaming changes from a plugin.",
        group=CONNECTION,
        order=6,
        default="debezium",
    ),
    ConfigKey(
        "plugin.name",
        "STRING",
        "The name of the Postgres logical decoding plugin installed on the "
        "server. kctl decodes with wal2json.",
        group=CONNECTION,
        order=7,
        default=PLUGIN,
        check=_plugin,
    ),
    ConfigKey(
        "snapshot.mode",
        "STRING",
        "The criteria for running a snapshot upon startup of the connector: "
        "'initial' (the default) reads every captured table's rows first, 'never' streams changes only.",
        group=CONNECTOR,
        order=2,
        default="initial",
        check=one_of(*SNAPSHOT_MODES),
    ),
    ConfigKey(
        "tombstones.on.delete",
        "BOOLEAN",
        "Whether delete operations should be represented by a delete "
        "event and a subsequent tombstone event (true) or only by a delete event (false).",
        group=CONNECTOR,
        order=3,
        default="true",
    ),
]


def checks(config: Mapping[str, str]) -> dict[str, list[str]]:
    """Refusals across settings: Debezium takes an include list or an exclude list, not both."""
    for key in ("table.include.list", "table.exclude.list"):
        reason = _regexes(config.get(key, ""))
        if reason:
            return {key: [reason]}
    if config.get("table.include.list", "").strip() and config.get("table.exclude.list", "").strip():
        message = '"table.include.list" is already specified'
        return {"table.include.list": [message], "table.exclude.list": [message]}
    return {}


def patterns(value: str) -> list[str]:
    return [pattern.strip() for pattern in value.split(",") if pattern.strip()]


def captured(config: Mapping[str, str], schema: str, table: str) -> bool:
    """Whether a table's changes are captured: its `schema.table` matches an include pattern
    (every table but the system's when there is none) and no exclude pattern, whole."""
    name = f"{schema}.{table}"
    included = patterns(config.get("table.include.list", ""))
    if included:
        return any(re.fullmatch(p, name) for p in included)
    return not any(re.fullmatch(p, name) for p in patterns(config.get("table.exclude.list", "")))


def tombstones(config: Mapping[str, str]) -> bool:
    return config.get("tombstones.on.delete", "true").strip().lower() != "false"

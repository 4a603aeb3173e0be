"""The JDBC connectors' settings, with Confluent's names, defaults and documentation
(JdbcSourceConnectorConfig, JdbcSinkConfig), and the checks across settings that refuse a
config before it runs."""

from __future__ import annotations

from collections.abc import Mapping

from connect.configdef import ConfigKey, at_least, one_of

SQLITE, POSTGRESQL = "jdbc:sqlite:", "jdbc:postgresql:"
DATABASE, MODE, CONNECTOR = "Database", "Mode", "Connector"
WRITES, DATA_MAPPING, DDL, RETRIES = "Writes", "Data Mapping", "DDL Support", "Retries"
MODES = ("bulk", "incrementing", "timestamp", "timestamp+incrementing")


def _url(value: str) -> str | None:
    if value.strip().startswith((SQLITE, POSTGRESQL)):
        return None
    return f"this worker connects to SQLite ({SQLITE}PATH) and PostgreSQL ({POSTGRESQL}//HOST:PORT/DB) only"


def _boolean(value: str) -> str | None:
    return None if value.strip().lower() in ("true", "false") else "Expected value to be either true or false"


def _long(value: str) -> str | None:
    try:
        int(value.strip())
    except ValueError:
        return "Not a number of type LONG"
    return None


def _connection_keys(order: int) -> list[ConfigKey]:
    return [
        ConfigKey(
            "connection.url",
            "STRING",
            "JDBC connection URL.\nFor example: ``jdbc:sqlite:/path/to/file.db``, "
            "``jdbc:postgresql://localhost:5432/db_name``",
            required=True,
            group=DATABASE,
            order=order,
            width="LONG",
            display_name="JDBC URL",
            check=_url,
        ),
        ConfigKey(
            "connection.user",
            "STRING",
            "JDBC connection user.",
            group=DATABASE,
            order=order + 1,
            width="LONG",
            display_name="JDBC User",
        ),
        ConfigKey(
            "connection.password",
            "PASSWORD",
            "JDBC connection password.",
            group=DATABASE,
            order=order + 2,
            width="SHORT",
            display_name="JDBC Password",
        ),
    ]


SOURCE_KEYS = [
    *_connection_keys(1),
    ConfigKey(
        "table.whitelist",
        "LIST",
        "List of tables to include in copying. If specified, ``table.blacklist`` may not be set. Use a "
        'comma-separated list to specify multiple tables (for example, ``table.whitelist: "User, '
        'Address, Email"``).',
        default="",
        importance="MEDIUM",
        group=DATABASE,
        order=4,
        width="LONG",
        display_name="Table Whitelist",
    ),
    ConfigKey(
        "table.blacklist",
        "LIST",
        "List of tables to exclude from copying. If specified, ``table.whitelist`` may not be set. Use a "
        'comma-separated list to specify multiple tables (for example, ``table.blacklist: "User, '
        'Address, Email"``).',
        default="",
        importance="MEDIUM",
        group=DATABASE,
        order=5,
        width="LONG",
        display_name="Table Blacklist",
    ),
    ConfigKey(
        "mode",
        "STRING",
        "The mode for updating a table each time it is polled. Options include:\n"
        "  * bulk: perform a bulk load of the entire table each time it is polled\n"
        "  * incrementing: use a strictly incrementing column on each table to detect only new rows. "
        "Note that this will not detect modifications or deletions of existing rows.\n"
        "  * timestamp: use a timestamp (or timestamp-like) column to detect new and modified rows. This "
        "assumes the column is updated with each write, and that values are monotonically incrementing, "
        "but not necessarily unique.\n"
        "  * timestamp+incrementing: use two columns, a timestamp column that detects new and modified "
        "rows and a strictly incrementing column which provides a globally unique ID for updates so each "
        "row can be assigned a unique stream offset.",
        default="",
        group=MODE,
        order=1,
        width="MEDIUM",
        display_name="Table Loading Mode",
        check=one_of("", *MODES),
    ),
    ConfigKey(
        "incrementing.column.name",
        "STRING",
        "The name of the strictly incrementing column to use to detect new rows. Any empty value "
        "indicates the column should be autodetected by looking for an auto-incrementing column. This "
        "column may not be nullable.",
        default="",
        importance="MEDIUM",
        group=MODE,
        order=2,
        width="MEDIUM",
        display_name="Incrementing Column Name",
    ),
    ConfigKey(
        "timestamp.column.name",
        "LIST",
        "Comma separated list of one or more timestamp columns to detect new or modified rows using the "
        "COALESCE SQL function. Rows whose first non-null timestamp value is greater than the largest "
        "previous timestamp value seen will be discovered with each poll. At least one column should not "
        "be nullable.",
        default="",
        importance="MEDIUM",
        group=MODE,
        order=3,
        width="MEDIUM",
        display_name="Timestamp Column Name",
    ),
    ConfigKey(
        "query",
        "STRING",
        "If specified, the query to perform to select new or updated rows. Use this setting if you want "
        "to join tables, select subsets of columns in a table, or filter data. If used, this connector "
        "will only copy data using this query -- whole-table copying will be disabled. Different query "
        "modes may still be used for incremental updates.",
        default="",
        importance="MEDIUM",
        group=MODE,
        order=5,
        width="SHORT",
        display_name="Query",
    ),
    ConfigKey(
        "poll.interval.ms",
        "INT",
        "Frequency in ms to poll for new data in each table.",
        default="5000",
        group=CONNECTOR,
        order=1,
        width="SHORT",
        display_name="Poll Interval (ms)",
        check=at_least(1),
    ),
    ConfigKey(
        "batch.max.rows",
        "INT",
        "Maximum number of rows to include in a single batch when polling for new data. This setting can "
        "be used to limit the amount of data buffered internally in the connector.",
        default="100",
        importance="LOW",
        group=CONNECTOR,
        order=2,
        width="SHORT",
        display_name="Max Rows Per Batch",
        check=at_least(1),
    ),
    ConfigKey(
        "topic.prefix",
        "STRING",
        "Prefix to prepend to table names to generate the name of the Kafka topic to publish data to, or "
        "in the case of a custom query, the full name of the topic to publish to.",
        default="",
        group=CONNECTOR,
        order=4,
        width="MEDIUM",
        display_name="Topic Prefix",
    ),
    ConfigKey(
        "timestamp.delay.interval.ms",
        "LONG",
        "How long to wait after a row with certain timestamp appears before we include it in the result. "
        "You may choose to add some delay to allow transactions with earlier timestamp to complete. The "
        "first execution will fetch all available records (i.e. starting at timestamp 0) until current "
        "time minus the delay. Every following execution will get data from the last time we fetched "
        "until current time minus the delay.",
        default="0",
        importance="LOW",
        group=CONNECTOR,
        order=5,
        width="MEDIUM",
        display_name="Delay Interval (ms)",
        check=_long,
    ),
]

SINK_KEYS = [
    *_connection_keys(1),
    ConfigKey(
        "insert.mode",
        "STRING",
        "The insertion mode to use. Supported modes are:\n"
        "``insert``\n"
        "    Use standard SQL ``INSERT`` statements.\n"
        "``upsert``\n"
        "    Use the appropriate upsert semantics for the target database if it is supported by the "
        "connector, e.g. ``INSERT OR IGNORE``.\n"
        "``update``\n"
        "    Use the appropriate update semantics for the target database if it is supported by the "
        "connector, e.g. ``UPDATE``.",
        default="insert",
        group=WRITES,
        order=1,
        width="MEDIUM",
        display_name="Insert Mode",
        check=one_of("insert", "upsert", "update"),
    ),
    ConfigKey(
        "batch.size",
        "INT",
        "Specifies how many records to attempt to batch together for insertion into the destination "
        "table, when possible.",
        default="3000",
        importance="MEDIUM",
        group=WRITES,
        order=2,
        width="SHORT",
        display_name="Batch Size",
        check=at_least(0),
    ),
    ConfigKey(
        "delete.enabled",
        "BOOLEAN",
        "Whether to treat ``null`` record values as deletes. Requires ``pk.mode`` to be ``record_key``.",
        default="false",
        importance="MEDIUM",
        group=WRITES,
        order=3,
        width="SHORT",
        display_name="Enable deletes",
        check=_boolean,
    ),
    ConfigKey(
        "table.name.format",
        "STRING",
        "A format string for the destination table name, which may contain '${topic}' as a placeholder "
        "for the originating topic name.\n"
        "For example, ``kafka_${topic}`` for the topic 'orders' will map to the table name "
        "'kafka_orders'.",
        default="${topic}",
        importance="MEDIUM",
        group=DATA_MAPPING,
        order=1,
        width="LONG",
        display_name="Table Name Format",
    ),
    ConfigKey(
        "pk.mode",
        "STRING",
        "The primary key mode, also refer to ``pk.fields`` documentation for interplay. Supported modes "
        "are:\n"
        "``none``\n"
        "    No keys utilized.\n"
        "``kafka``\n"
        "    Apache Kafka coordinates are used as the PK.\n"
        "``record_key``\n"
        "    Field(s) from the record key are used, which may be a primitive or a struct.\n"
        "``record_value``\n"
        "    Field(s) from the record value are used, which must be a struct.",
        default="none",
        group=DATA_MAPPING,
        order=2,
        width="MEDIUM",
        display_name="Primary Key Mode",
        check=one_of("none", "kafka", "record_key", "record_value"),
    ),
    ConfigKey(
        "pk.fields",
        "LIST",
        "List of comma-separated primary key field names. The runtime interpretation of this config "
        "depends on the ``pk.mode``:\n"
        "``none``\n"
        "    Ignored as no fields are used as primary key in this mode.\n"
        "``kafka``\n"
        "    Must be a trio representing the Kafka coordinates, defaults to "
        "``__connect_topic,__connect_partition,__connect_offset`` if empty.\n"
        "``record_key``\n"
        "    If empty, all fields from the key struct will be used, otherwise used to extract the "
        "desired fields - for primitive key only a single field name must be configured.\n"
        "``record_value``\n"
        "    If empty, all fields from the value struct will be used, otherwise used to extract the "
        "desired fields.",
        default="",
        importance="MEDIUM",
        group=DATA_MAPPING,
        order=3,
        width="LONG",
        display_name="Primary Key Fields",
    ),
    ConfigKey(
        "fields.whitelist",
        "LIST",
        "List of comma-separated record value field names. If empty, all fields from the record value "
        "are utilized, otherwise used to filter to the desired fields.\n"
        "Note that ``pk.fields`` is applied independently in the context of which field(s) form the "
        "primary key columns in the destination database, while this configuration is applicable for the "
        "other columns.",
        default="",
        importance="MEDIUM",
        group=DATA_MAPPING,
        order=4,
        width="LONG",
        display_name="Fields Whitelist",
    ),
    ConfigKey(
        "auto.create",
        "BOOLEAN",
        "Whether to automatically create the destination table based on record schema if it is found to "
        "be missing by issuing ``CREATE``.",
        default="false",
        importance="MEDIUM",
        group=DDL,
        order=1,
        width="SHORT",
        display_name="Auto-Create",
        check=_boolean,
    ),
    ConfigKey(
        "auto.evolve",
        "BOOLEAN",
        "Whether to automatically add columns in the table schema when found to be missing relative to "
        "the record schema by issuing ``ALTER``.",
        default="false",
        importance="MEDIUM",
        group=DDL,
        order=2,
        width="SHORT",
        display_name="Auto-Evolve",
        check=_boolean,
    ),
]


def source_checks(config: Mapping[str, str]) -> dict[str, list[str]]:
    """JdbcSourceTask's refusals at start, made when the config is validated instead."""
    found: dict[str, list[str]] = {}
    mode = config.get("mode", "").strip()
    if not mode:
        found["mode"] = ["Query mode must be specified"]
    if mode.startswith("timestamp") and not config.get("timestamp.column.name", "").strip():
        found["timestamp.column.name"] = [f"Mode {mode} needs a timestamp column: set timestamp.column.name"]
    if config.get("table.whitelist", "").strip() and config.get("table.blacklist", "").strip():
        message = "table.whitelist and table.blacklist are mutually exclusive: set one of them"
        found["table.whitelist"] = found["table.blacklist"] = [message]
    return found


def sink_checks(config: Mapping[str, str]) -> dict[str, list[str]]:
    """JdbcSinkConfig's refusals of settings that do not go together."""
    found: dict[str, list[str]] = {}
    pk_mode = config.get("pk.mode", "none").strip().lower()
    if config.get("delete.enabled", "false").strip().lower() == "true" and pk_mode != "record_key":
        found["delete.enabled"] = ["Deletes are only supported for pk.mode record_key"]
    insert_mode = config.get("insert.mode", "insert").strip().lower()
    if insert_mode in ("upsert", "update") and pk_mode == "none":
        found["pk.mode"] = [f"insert.mode {insert_mode} needs the rows' primary key: set pk.mode"]
    return found

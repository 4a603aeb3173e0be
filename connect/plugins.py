"""The connectors this worker runs, under Kafka's class names and short aliases, with the
settings each takes (Kafka's ConfigDefs: ConnectorConfig's common keys, then the connector's
own) and the checks Connect makes before a connector is created."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from connect import converters, errorconfig
from connect.configdef import ConfigKey, Validation, at_least, non_empty
from connect.errors import bad_request
from connect.jdbc import config as jdbc
from connect.mirror import settings as mirror_settings
from connect.postgres import config as postgres

KAFKA_VERSION = "3.9.0"  # the Kafka Connect release whose REST API and connectors these follow
COMMON = "Common"
SOURCE, SINK = "source", "sink"


def _converter_key(side: str, order: int) -> ConfigKey:
    return ConfigKey(
        f"{side}.converter",
        "CLASS",
        "Converter class used to convert between Kafka Connect format and the serialized form "
        "that is written to Kafka.",
        importance="LOW",
        group=COMMON,
        order=order,
        width="SHORT",
        display_name=f"{side.capitalize()} converter class",
        check=converters.unknown,
    )


COMMON_KEYS = [
    ConfigKey(
        "name",
        "STRING",
        "Globally unique name to use for this connector.",
        required=True,
        group=COMMON,
        order=1,
        width="MEDIUM",
        display_name="Connector name",
        check=non_empty,
    ),
    ConfigKey(
        "connector.class",
        "STRING",
        "Name or alias of the class for this connector.",
        required=True,
        group=COMMON,
        order=2,
        width="LONG",
        display_name="Connector class",
    ),
    ConfigKey(
        "tasks.max",
        "INT",
        "Maximum number of tasks to use for this connector.",
        default="1",
        group=COMMON,
        order=3,
        width="SHORT",
        display_name="Tasks max",
        check=at_least(1),
    ),
    _converter_key("key", 5),
    _converter_key("value", 6),
    *errorconfig.COMMON_KEYS,
]


def _single_topic(value: str) -> str | None:
    if "," in value:
        return "'topic' in FileStreamSourceConnector configuration requires definition of a single topic"
    return non_empty(value)


@dataclass(frozen=True)
class Plugin:
    class_name: str
    alias: str
    type: str
    task_class: str
    runner: str  # the module whose stream(spark, spec) builds the connector's query
    keys: list[ConfigKey]
    checks: Callable[[Mapping[str, str]], dict[str, list[str]]] | None = None  # across keys, by key
    # a module with offsets(checkpoint, config) and topics(checkpoint, config), for progress
    # not in the FileStream connectors' shapes
    progress: str | None = None

    def listing(self) -> dict[str, str]:
        return {"class": self.class_name, "type": self.type, "version": KAFKA_VERSION}

    def validation(self, config: Mapping[str, str]) -> Validation:
        found = Validation(COMMON_KEYS + self._type_keys() + self.keys, config)
        if self.type == SINK:
            found.extra = _sink_topics(config)
            for name, messages in errorconfig.dlq_topic_errors(config).items():
                found.extra.setdefault(name, []).extend(messages)
        for name, messages in (self.checks(config) if self.checks else {}).items():
            found.extra.setdefault(name, []).extend(messages)
        return found

    def _type_keys(self) -> list[ConfigKey]:
        if self.type == SOURCE:
            return []
        return [
            ConfigKey(
                "topics",
                "LIST",
                "List of topics to consume, separated by commas",
                default="",
                group=COMMON,
                order=4,
                width="LONG",
                display_name="Topics",
            ),
            ConfigKey(
                "topics.regex",
                "STRING",
                "Regular expression giving topics to consume.",
                default="",
                group=COMMON,
                order=4,
                width="LONG",
                display_name="Topics regex",
            ),
            *errorconfig.DLQ_KEYS,
        ]


def _sink_topics(config: Mapping[str, str]) -> dict[str, list[str]]:
    """SinkConnectorConfig.validate's checks of topics and topics.regex."""
    topics, pattern = config.get("topics", "").strip(), config.get("topics.regex", "").strip()
    if topics and pattern:
        message = "topics and topics.regex are mutually exclusive options, but both are set."
    elif not topics and not pattern:
        message = "Must configure one of topics or topics.regex"
    else:
        return {}
    return {"topics": [message], "topics.regex": [message]}


FILE_SOURCE = Plugin(
    "org.apache.kafka.connect.file.FileStreamSourceConnector",
    "FileStreamSource",
    SOURCE,
    "org.apache.kafka.connect.file.FileStreamSourceTask",
    "connect.filesource",
    [
        ConfigKey("file", "STRING", "Source filename.", required=True),
        ConfigKey("topic", "STRING", "The topic to publish data to", required=True, check=_single_topic),
        ConfigKey(
            "batch.size",
            "INT",
            "The maximum number of records the source task can read from the file each time it is polled",
            default="2000",
            importance="LOW",
            check=at_least(1),
        ),
    ],
)
FILE_SINK = Plugin(
    "org.apache.kafka.connect.file.FileStreamSinkConnector",
    "FileStreamSink",
    SINK,
    "org.apache.kafka.connect.file.FileStreamSinkTask",
    "connect.filesink",
    [ConfigKey("file", "STRING", "Destination filename.", required=True, check=non_empty)],
)
MIRROR = "org.apache.kafka.connect.mirror."
MIRROR_PLUGINS = tuple(
    Plugin(
        MIRROR + name + "Connector",
        name,
        SOURCE,
        MIRROR + name + "Task",
        runner,
        keys,
        progress="connect.mirror.progress",
    )
    for name, runner, keys in (
        ("MirrorCheckpoint", "connect.mirror.checkpoint", mirror_settings.CHECKPOINT_KEYS),
        ("MirrorHeartbeat", "connect.mirror.heartbeat", mirror_settings.HEARTBEAT_KEYS),
        ("MirrorSource", "connect.mirror.source", mirror_settings.SOURCE_KEYS),
    )
)
JDBC_SOURCE = Plugin(
    "io.confluent.connect.jdbc.JdbcSourceConnector",
    "JdbcSource",
    SOURCE,
    "io.confluent.connect.jdbc.source.JdbcSourceTask",
    "connect.jdbc.source",
    jdbc.SOURCE_KEYS,
    jdbc.source_checks,
    progress="connect.jdbc.progress",
)
JDBC_SINK = Plugin(
    "io.confluent.connect.jdbc.JdbcSinkConnector",
    "JdbcSink",
    SINK,
    "io.confluent.connect.jdbc.sink.JdbcSinkTask",
    "connect.jdbc.sink",
    jdbc.SINK_KEYS,
    jdbc.sink_checks,
)
POSTGRES = Plugin(
    "io.debezium.connector.postgresql.PostgresConnector",
    "Postgres",
    SOURCE,
    "io.debezium.connector.postgresql.PostgresConnectorTask",
    "connect.postgres.source",
    postgres.KEYS,
    postgres.checks,
    progress="connect.postgres.progress",
)
PLUGINS = (FILE_SINK, FILE_SOURCE, JDBC_SINK, JDBC_SOURCE, *MIRROR_PLUGINS, POSTGRES)


def find(name: str) -> Plugin | None:
    """The plugin of a class name, its simple name or its alias, as Connect resolves them."""
    for plugin in PLUGINS:
        if name in (plugin.class_name, plugin.alias, plugin.class_name.rsplit(".", 1)[-1]):
            return plugin
    return None


def of_config(config: Mapping[str, str]) -> Plugin:
    """The plugin a connector config names; Connect's 400 when it names none we have."""
    name = config.get("connector.class")
    if not name:
        raise bad_request(f"Connector config {_java_map(config)} contains no connector type")
    plugin = find(name)
    if plugin is None:
        raise bad_request(
            f"Failed to find any class that implements Connector and which name matches {name}, "
            f"available connectors are: {', '.join(p.class_name for p in PLUGINS)}"
        )
    return plugin


def listing(connectors_only: bool) -> list[dict[str, str]]:
    found = [plugin.listing() for plugin in PLUGINS]
    if not connectors_only:
        found += [{"class": c, "type": "converter", "version": KAFKA_VERSION} for c in converters.CONVERTERS]
    return found


def checked(config: Mapping[str, str]) -> Plugin:
    """The config's plugin, once every setting passes: Connect's 400 listing every error."""
    plugin = of_config(config)
    messages = plugin.validation(config).messages()
    if messages:
        lines = "\n".join(messages)
        raise bad_request(
            f"Connector configuration is invalid and contains the following {len(messages)} error(s):\n"
            f"{lines}\nYou can also find the above list of errors at the endpoint "
            "`/connector-plugins/{connectorType}/config/validate`"
        )
    return plugin


def _java_map(config: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in config.items()) + "}"

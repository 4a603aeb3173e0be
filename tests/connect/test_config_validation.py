"""Connector configs checked as Kafka Connect checks them, with its messages and its
ConfigInfos shape, and the converters' bytes, without a worker."""

import json

import pytest

from connect import plugins
from connect.converters import ENVELOPE_REQUIRED, ConversionError, Converter, converter
from connect.errors import ConnectError

pytestmark = pytest.mark.unit

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


def refusal(config):
    with pytest.raises(ConnectError) as caught:
        plugins.checked(config)
    assert caught.value.http_status == 400
    return caught.value.message


def test_class_names_aliases_and_simple_names_find_the_same_plugin():
    for name in (SOURCE, "FileStreamSource", "FileStreamSourceConnector"):
        assert plugins.find(name) is plugins.FILE_SOURCE
    assert plugins.find("FileStreamSink") is plugins.FILE_SINK
    assert plugins.find("io.confluent.connect.s3.S3SinkConnector") is None


def test_a_missing_required_key_is_refused_in_connects_words():
    message = refusal({"name": "n", "connector.class": "FileStreamSource", "topic": "t"})
    assert message.splitlines() == [
        "Connector configuration is invalid and contains the following 1 error(s):",
        'Missing required configuration "file" which has no default value.',
        "You can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`",
    ]


def test_unknown_and_missing_classes():
    assert refusal({"name": "n", "connector.class": "Nope"}).startswith(
        "Failed to find any class that implements Connector and which name matches Nope, available "
        "connectors are: org.apache.kafka.connect.file.FileStreamSinkConnector"
    )
    assert refusal({"name": "n"}) == "Connector config {name=n} contains no connector type"


def test_sink_topics_and_value_checks():
    base = {"name": "n", "connector.class": "FileStreamSink", "file": "/f"}
    assert "Must configure one of topics or topics.regex" in refusal(base)
    both = refusal({**base, "topics": "a", "topics.regex": "a.*"})
    assert "topics and topics.regex are mutually exclusive options, but both are set." in both
    assert "Invalid value x for configuration tasks.max: Not a number of type INT" in refusal(
        {**base, "topics": "a", "tasks.max": "x"}
    )
    assert "Invalid value Foo for configuration value.converter: Class Foo could not be found." in refusal(
        {**base, "topics": "a", "value.converter": "Foo"}
    )
    assert plugins.checked({**base, "topics": "a"}) is plugins.FILE_SINK


def test_validate_answers_connects_config_infos():
    infos = plugins.FILE_SOURCE.validation({"connector.class": SOURCE, "tasks.max": "0"}).infos(SOURCE)
    assert infos["name"] == SOURCE and infos["error_count"] == 4  # name, tasks.max, file, topic
    assert infos["groups"] == ["Common", "Error Handling"]
    by_name = {c["definition"]["name"]: c for c in infos["configs"]}
    assert set(by_name["tasks.max"]["definition"]) == {
        "name",
        "type",
        "required",
        "default_value",
        "importance",
        "documentation",
        "group",
        "order",
        "width",
        "display_name",
        "dependents",
    }
    assert by_name["tasks.max"]["value"] == {
        "name": "tasks.max",
        "value": "0",
        "recommended_values": [],
        "errors": ["Invalid value 0 for configuration tasks.max: Value must be at least 1"],
        "visible": True,
    }
    assert by_name["batch.size"]["value"]["value"] == "2000"  # the default


def test_converters_write_and_read_connects_formats():
    json_schemas = Converter()
    assert json.loads(json_schemas.from_line("héllo")) == {
        "schema": {"type": "string", "optional": False},
        "payload": "héllo",
    }
    assert json_schemas.to_line(json_schemas.from_line("héllo")) == "héllo"
    plain = Converter(schemas_enable=False)
    assert plain.from_line("a") == b'"a"' and plain.to_line(b'{"a": 1}') == '{"a":1}'
    with pytest.raises(ConversionError, match='requires "schema" and "payload"'):
        json_schemas.to_line(b'{"a": 1}')
    assert ENVELOPE_REQUIRED.startswith("JsonConverter with schemas.enable requires")
    text = converter("value", {"value.converter": "org.apache.kafka.connect.storage.StringConverter"}, {})
    assert text.from_line("a") == b"a" and text.to_line(b"a") == "a"
    worker = {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    assert converter("value", {}, worker) == Converter(schemas_enable=False)

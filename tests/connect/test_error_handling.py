"""Error handling as Kafka Connect's: the errors.* settings and their checks, the dead letter
queue's records and `__connect.errors.*` headers, what a sink's failed record does under each
tolerance, the counts and lag the metrics endpoint shows; without a worker or a cluster."""

import pytest

from connect import deadletter, metrics, plugins
from connect.converters import ConversionError, Converter
from connect.errorconfig import ErrorPolicy
from connect.errors import ConnectError
from connect.lag import bytes_behind, records_behind
from connect.queryspec import QuerySpec
from connect.workerconfig import capped_replication
from kctl.spark.offsets import TopicPartition

pytestmark = pytest.mark.unit

JSON = "org.apache.kafka.connect.json.JsonConverter"
SINK = {"name": "out", "connector.class": "FileStreamSink", "file": "/f", "topics": "a, b"}


def refusal(config):
    with pytest.raises(ConnectError) as caught:
        plugins.checked(config)
    return caught.value.message


def failed(offset=7, error=None):
    try:
        Converter().to_line(b'{"plain": "json"}')
    except ConversionError as exc:
        error = error or exc
    return deadletter.FailedRecord(
        "a", 2, offset, b"k", b'{"plain": "json"}', [("trace-id", b"x")], "VALUE_CONVERTER", JSON, error
    )


def test_errors_tolerance_all_and_the_dead_letter_queue_keys_are_sinks_settings():
    assert plugins.checked({**SINK, "errors.tolerance": "all"}) is plugins.FILE_SINK
    sink_keys = {key.name for key in plugins.FILE_SINK.validation({}).keys}
    source_keys = {key.name for key in plugins.FILE_SOURCE.validation({}).keys}
    dlq = {
        "errors.deadletterqueue.topic.name",
        "errors.deadletterqueue.topic.replication.factor",
        "errors.deadletterqueue.context.headers.enable",
    }
    common = {
        "errors.tolerance",
        "errors.retry.timeout",
        "errors.retry.delay.max.ms",
        "errors.log.enable",
        "errors.log.include.messages",
    }
    assert dlq | common <= sink_keys and common <= source_keys and not dlq & source_keys
    infos = plugins.FILE_SINK.validation(SINK).infos(plugins.FILE_SINK.class_name)
    defaults = {c["definition"]["name"]: c["definition"]["default_value"] for c in infos["configs"]}
    assert defaults["errors.deadletterqueue.topic.replication.factor"] == "3"
    assert defaults["errors.retry.delay.max.ms"] == "60000" and defaults["errors.log.enable"] == "false"


def test_connects_refusals_of_error_settings():
    assert (
        "Invalid value some for configuration errors.tolerance: String must be one of: none, all"
        in refusal({**SINK, "errors.tolerance": "some"})
    )
    assert (
        "Invalid value yes for configuration errors.log.enable: Expected value to be either true or false"
        in refusal({**SINK, "errors.log.enable": "yes"})
    )
    assert "errors.retry.timeout: Not a number of type LONG" in refusal({**SINK, "errors.retry.timeout": "x"})
    assert (
        "The DLQ topic 'b' may not be included in the list of topics ('topics=[a, b]') consumed by "
        "the connector" in refusal({**SINK, "errors.deadletterqueue.topic.name": "b"})
    )
    regex = {**SINK, "topics": "", "topics.regex": "l.*", "errors.deadletterqueue.topic.name": "lost"}
    assert (
        "The DLQ topic 'lost' may not be matched by the regex for the topics ('topics.regex=l.*') consumed "
        "by the connector" in refusal(regex)
    )


def test_the_policy_read_from_a_config():
    assert ErrorPolicy.of({}) == ErrorPolicy()
    config = {
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": " dlq ",
        "errors.deadletterqueue.context.headers.enable": "TRUE",
        "errors.deadletterqueue.topic.replication.factor": "-1",
    }
    policy = ErrorPolicy.of(config)
    assert policy.tolerate_all and policy.dlq_topic == "dlq" and policy.context_headers
    assert capped_replication(policy.dlq_replication_factor, 1) == 1
    assert capped_replication(3, 5) == 3 and capped_replication(5, 2) == 2


def test_a_dead_letter_keeps_the_record_and_adds_connects_context_headers():
    record = failed()
    assert deadletter.letter(record, "out", context=False) == deadletter.Letter(
        b"k", b'{"plain": "json"}', [("trace-id", b"x")]
    )
    headers = deadletter.letter(record, "out", context=True).headers
    assert headers[0] == ("trace-id", b"x")
    context = dict(headers[1:])
    assert list(context) == [
        f"__connect.errors.{name}"
        for name in (
            "topic",
            "partition",
            "offset",
            "connector.name",
            "task.id",
            "stage",
            "class.name",
            "exception.class.name",
            "exception.message",
            "exception.stacktrace",
        )
    ]
    assert context["__connect.errors.topic"] == b"a" and context["__connect.errors.partition"] == b"2"
    assert context["__connect.errors.offset"] == b"7" and context["__connect.errors.task.id"] == b"0"
    assert context["__connect.errors.connector.name"] == b"out"
    assert context["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert context["__connect.errors.class.name"] == JSON.encode()
    assert (
        context["__connect.errors.exception.class.name"] == b"org.apache.kafka.connect.errors.DataException"
    )
    assert context["__connect.errors.exception.message"].startswith(b"JsonConverter with schemas.enable")
    assert b"ConversionError" in context["__connect.errors.exception.stacktrace"]
    # a replay recognises its letter whatever line numbers its stack trace names
    other = deadletter.letter(record, "out", context=True)
    moved = deadletter.Letter(
        other.key, other.value, [*other.headers[:-1], (deadletter.STACKTRACE, b"elsewhere")]
    )
    assert deadletter.identity(moved) == deadletter.identity(other)
    assert deadletter.identity(deadletter.letter(failed(offset=8), "out", True)) != deadletter.identity(other)


def spec(tmp_path, **config):
    return QuerySpec("out", {**SINK, **config}, {}, {}, tmp_path)


def test_tolerance_none_fails_the_task_naming_the_record(tmp_path):
    metrics.REGISTRY.forget("out")
    with pytest.raises(deadletter.ToleranceExceeded) as caught:
        with deadletter.batch(spec(tmp_path), 0) as errors:
            errors.failed(failed(offset=41))
    message = str(caught.value)
    assert message.startswith("Tolerance exceeded in error handler. Error encountered in task out-0.")
    assert "where consumed record is {topic='a', partition=2, offset=41}" in message
    assert 'requires "schema" and "payload"' in message
    counts = metrics.REGISTRY.counts("out")
    assert (counts.record_errors, counts.records_skipped, counts.dlq_requests) == (1, 0, 0)
    assert counts.last_error.startswith("org.apache.kafka.connect.errors.DataException: JsonConverter")


def test_tolerance_all_skips_and_counts(tmp_path, caplog):
    metrics.REGISTRY.forget("out")
    config = {"errors.tolerance": "all", "errors.log.enable": "true", "errors.log.include.messages": "true"}
    with deadletter.batch(spec(tmp_path, **config), 0) as errors:
        errors.failed(failed(offset=1))
        errors.failed(failed(offset=2))
    counts = metrics.REGISTRY.counts("out")
    assert (counts.record_errors, counts.records_skipped, counts.errors_logged) == (2, 2, 2)
    assert "where consumed record is {topic='a', partition=2, offset=2}" in caplog.text
    metrics.REGISTRY.progress("connect-out", 10)
    metrics.REGISTRY.progress("someone-else", 5)
    document = metrics.document("out", "sink", metrics.REGISTRY.counts("out"), 0)
    assert document["metrics"]["sink-record-read-total"] == 10
    assert document["metrics"]["sink-record-send-total"] == 8
    assert document["metrics"]["total-records-skipped"] == 2 and document["lag"] == 0
    source = metrics.document("in", "source", metrics.Counts(records=3), 12)["metrics"]
    assert source["source-record-poll-total"] == source["source-record-write-total"] == 3


def test_lag_arithmetic():
    a0, a1, b0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
    ends = {a0: 10, a1: 5, b0: 7}
    starts = {a0: 0, a1: 2, b0: 4}
    assert records_behind(ends, starts, {}) == 10 + 3 + 3  # nothing committed: from the log start
    assert records_behind(ends, starts, {("a", 0): 10, ("a", 1): 4, ("b", 0): 1}) == 0 + 1 + 3
    assert bytes_behind(100, 60) == 40 and bytes_behind(10, 60) == 0

"""The lossless JSON pipe: `kctl consume a --json -e | kctl produce b --input-format json`
copies keys, values, headers, timestamps and partitions byte for byte, and a bad input line
stops the copy with its line number and exit 5, after delivering the records before it.

The pipe runs through a real shell against a real broker; the JSON record scheme itself is
also checked without a cluster, record by record. `kctl consume --filter` picks records out
of the same topic by key, value and headers.
"""

import json
import shlex
import subprocess

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, KafkaError, Message, Producer, TopicPartition
from typer.testing import CliRunner

from kctl.consume.filters import FilterSyntaxError, compile_filters
from kctl.consume.formatting import record_json
from kctl.main import app
from kctl.shell.exit_codes import ExitCode
from kctl.shell.recordjson import JsonLines
from tests.cluster_harness import free_port
from tests.kctl.cli import kctl_command, kctl_env
from tests.kctl.local import kctl_in

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 3
BASE_TS = 1_600_000_000_000
# The records are stamped in 2020: time-based retention (checked every
# log.retention.check.interval.ms) would delete them mid-test, as Kafka would.
KEEP_FOREVER = ("-c", "retention.ms=-1")


def source_records():
    """(partition, key, value, headers, timestamp) covering what a lossy pipe would break."""
    rows = []
    for i in range(30):
        key = None if i % 7 == 3 else bytes([0x80 | i, 0x00, 0xFF, i])  # binary, and null
        value = [f"text {i} ✓".encode(), bytes(range(i, i + 40)), None, b""][i % 4]
        headers = [
            ("trace", f"t{i}".encode()),
            ("bin", b"\x00\xfe\xff"),
            ("trace", b"\xc3\x28"),
            ("empty", b""),
            ("none", None),
        ][: i % 6]
        rows.append((i % PARTITIONS, key, value, headers, BASE_TS + 1000 * i))
    return rows


def produce_source(bootstrap, topic):
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for partition, key, value, headers, timestamp in source_records():
        producer.produce(topic, value, key, partition=partition, headers=headers, timestamp=timestamp)
    assert producer.flush(30) == 0


def records_by_partition(bootstrap, topic):
    """Every record of the topic as comparable tuples, per partition, in offset order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "unused",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    found = {p: [] for p in range(PARTITIONS)}
    at_end = set()
    try:
        while len(at_end) < PARTITIONS:
            msg = consumer.poll(10)
            assert msg is not None, f"no end of {topic} within 10s"
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                at_end.add(msg.partition())
                continue
            found[msg.partition()].append(
                (msg.offset(), msg.key(), msg.value(), msg.headers(), msg.timestamp())
            )
    finally:
        consumer.close()
    return found


def in_shell(directory, pipeline):
    """Run a pipeline of kctl commands through bash, failing on the first failing command."""
    script = "set -o pipefail; " + " | ".join(shlex.join(kctl_command(*argv)) for argv in pipeline)
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=90,
        env=kctl_env({"KCTL_HOME": str(directory)}),
    )


@pytest.mark.cluster
def test_consume_json_piped_into_produce_json_copies_a_topic(cluster):
    for topic in ("a", "b"):
        kctl_in(cluster.dir, "topic", "create", topic, "-p", str(PARTITIONS), *KEEP_FOREVER)
    produce_source(cluster.bootstrap, "a")

    copied = in_shell(
        cluster.dir, [("consume", "a", "--json", "-e"), ("produce", "b", "--input-format", "json")]
    )

    assert copied.returncode == 0, copied.stderr
    assert "30 records produced to b, 0 failed" in copied.stderr
    original, copy = (records_by_partition(cluster.bootstrap, t) for t in ("a", "b"))
    assert copy == original
    expected = {p: [] for p in range(PARTITIONS)}
    for partition, key, value, headers, timestamp in source_records():
        offset = len(expected[partition])
        expected[partition].append((offset, key, value, headers or None, (TIMESTAMP_CREATE_TIME, timestamp)))
    assert original == expected  # the comparison above saw every kind of record


@pytest.mark.cluster
@pytest.mark.parametrize(
    "options, summary",
    [
        ((), "2 records produced to bad, 0 failed"),
        (
            ("--transactional-id", "loader"),
            "2 records produced to bad, 0 failed; 1 transaction committed (2 records), 0 aborted",
        ),
        (
            ("--transactional-id", "loader", "--txn-size", "1"),
            "2 records produced to bad, 0 failed; 2 transactions committed (2 records), 0 aborted",
        ),
    ],
)
def test_a_bad_line_is_named_and_the_records_before_it_are_delivered(cluster, options, summary):
    kctl_in(cluster.dir, "topic", "create", "bad", "-p", "1")
    lines = b'{"value": "one"}\n{"key": "k", "value": "two"}\n{"value": "three"\n{"value": "never"}\n'

    result = kctl_in(
        cluster.dir, "produce", "bad", "-J", "json", *options, input=lines, expect=ExitCode.INVALID_INPUT
    )

    assert result.stderr.strip().splitlines() == [
        summary,
        "kctl: error: input line 3: not valid JSON: Expecting ',' delimiter at the end of the line",
    ]
    consumed = kctl_in(cluster.dir, "consume", "bad", "-e", "-q", "-f", "%k=%v\\n").stdout
    assert consumed == b"=one\nk=two\n"


@pytest.mark.unit
def test_json_input_refuses_key_options_before_connecting(isolated_env):
    nowhere = f"127.0.0.1:{free_port()}"
    result = CliRunner().invoke(
        app, ["produce", "t", "-b", nowhere, "-J", "json", "-K", ":"], env=isolated_env
    )
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.strip().startswith("kctl: error: --input-format json takes keys from the records")


def message(key, value, headers, partition=1, timestamp=BASE_TS):
    return Message(
        topic="a",
        partition=partition,
        offset=9,
        key=key,
        value=value,
        headers=headers,
        timestamp=(TIMESTAMP_CREATE_TIME, timestamp),
    )


@pytest.mark.unit
@pytest.mark.parametrize(
    "key, value, headers",
    [
        (b"k", b"text \xe2\x9c\x93", [("h", b"v")]),
        (None, None, []),
        (b"\xff\x00", bytes(range(256)), [("h", b"\x80"), ("h", b"ok"), ("h", None), ("e", b"")]),
        (b"", b"\xc3\x28", [("bin", b"\xc3\x28")]),
    ],
)
def test_every_record_reads_back_as_it_was_written(key, value, headers):
    line = record_json(message(key, value, headers))
    (parsed,) = JsonLines(None, [], PARTITIONS).records([line])
    expected = {"partition": 1, "timestamp": BASE_TS} | ({"headers": headers} if headers else {})
    assert parsed == (value, key, expected)


@pytest.mark.unit
def test_bytes_that_are_not_utf8_are_base64_and_say_so():
    doc = json.loads(record_json(message(b"\xff", b"ok\xff", [("h", b"\xfe"), ("t", b"text")])))
    assert doc["key"] == "/w==" and doc["key_encoding"] == "base64"
    assert doc["value"] == "b2v/" and doc["value_encoding"] == "base64"
    assert doc["headers"] == [
        {"key": "h", "value": "/g==", "value_encoding": "base64"},
        {"key": "t", "value": "text"},
    ]


@pytest.mark.unit
def test_minus_p_and_minus_h_apply_to_every_json_record():
    lines = [b'{"value": "v", "partition": 2, "headers": [{"key": "own", "value": "1"}]}\n']
    (parsed,) = JsonLines(0, [("added", b"2")], PARTITIONS).records(lines)
    assert parsed == (b"v", None, {"partition": 0, "headers": [("own", b"1"), ("added", b"2")]})


@pytest.mark.unit
@pytest.mark.parametrize(
    "line, error",
    [
        (b"[1]", "not a JSON object but a list"),
        (b'{"key": "k"}', 'no "value" (null for a record without one)'),
        (b'{"value": 5}', '"value" must be a string or null, not a number'),
        (b'{"value": "%%%", "value_encoding": "base64"}', '"value" is not base64'),
        (
            b'{"value": "a", "key": "a", "key_encoding": "hex"}',
            '"key_encoding" must be "base64" or absent, not "hex"',
        ),
        (b'{"value": "a", "headers": {"h": "v"}}', '"headers" must be a list of'),
        (b'{"value": "a", "headers": [{"key": "h", "value": 1}]}', 'header 1: "value" must be a string'),
        (b'{"value": "a", "partition": 3}', '"partition" 3 is not one of the topic\'s 0..2'),
        (b'{"value": "a", "timestamp": "now"}', '"timestamp" must be a whole number or null, not a string'),
        (b'{"value": "\\ud800"}', '"value" holds a lone surrogate'),
        (b"\xff", "not UTF-8 text"),
    ],
)
def test_bad_lines_stop_the_records_and_say_why(line, error):
    source = JsonLines(None, [], PARTITIONS)
    parsed = list(source.records([b'{"value": null}\n', line + b"\n", b'{"value": "after"}\n']))
    assert parsed == [(None, None, {})]
    assert source.error.code == ExitCode.INVALID_INPUT
    assert source.error.message.startswith(f"input line 2: {error}")


@pytest.mark.cluster
def test_filters_print_only_the_records_that_match(cluster):
    kctl_in(cluster.dir, "topic", "create", "f", "-p", str(PARTITIONS), *KEEP_FOREVER)
    produce_source(cluster.bootstrap, "f")

    def offsets(*filters):
        argv = ["consume", "f", "-e", "-q", "-f", "%p:%o\\n"]
        for expression in filters:
            argv += ["--filter", expression]
        return sorted(kctl_in(cluster.dir, *argv).stdout.decode().split())

    def expected(keep):
        return sorted(f"{p}:{o}" for p, o, row in numbered(source_records()) if keep(*row[1:4]))

    undecodable = expected(lambda key, value, headers: ("trace", b"\xc3\x28") in headers and bool(value))
    assert undecodable and offsets("header.trace~^\\xc3", "value~.") == undecodable
    assert offsets("header.bin") == expected(lambda key, value, headers: len(headers) >= 2)
    assert offsets("value=text 8 ✓") == expected(lambda key, value, headers: value == "text 8 ✓".encode())
    assert offsets("key=nothing") == []


def numbered(rows):
    """(partition, offset, row) for the source records, offsets counted per partition."""
    seen = dict.fromkeys(range(PARTITIONS), 0)
    for row in rows:
        yield row[0], seen[row[0]], row
        seen[row[0]] += 1


@pytest.mark.unit
@pytest.mark.parametrize(
    "filters, kept",
    [
        (["key=k"], True),
        (["key=K"], False),
        (["key~^k$", "value~ext"], True),
        (["header.h=ok"], True),
        (["header.h=no"], False),
        (["header.h"], True),
        (["header.x"], False),
        (["value~\\x00"], False),
    ],
)
def test_filter_expressions(filters, kept):
    test = compile_filters(filters)
    assert test is not None
    assert test(message(b"k", b"text", [("h", b"\x80"), ("h", b"ok")])) is kept


@pytest.mark.unit
@pytest.mark.parametrize("expression", ["partition=1", "key", "value", "header.=x", "key~("])
def test_a_bad_filter_is_refused(expression):
    with pytest.raises(FilterSyntaxError, match="invalid filter"):
        compile_filters([expression])


@pytest.mark.unit
def test_a_bad_filter_exits_5_before_connecting(isolated_env):
    nowhere = f"127.0.0.1:{free_port()}"
    result = CliRunner().invoke(
        app, ["consume", "t", "-b", nowhere, "--filter", "offset=3"], env=isolated_env
    )
    assert result.exit_code == ExitCode.INVALID_INPUT
    assert result.stderr.startswith("kctl: error: invalid filter 'offset=3'")

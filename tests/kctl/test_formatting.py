"""-f format tokens (kcat/rpk) and the --json record shape."""

import json

import pytest
from confluent_kafka import Message

from kctl.consume.formatting import DEFAULT_FORMAT, FormatError, compile_format, record_json

pytestmark = pytest.mark.unit


def record(key=b"k1", value=b"hello", headers=(("h1", b"v1"), ("h2", None))):
    return Message(
        topic="orders",
        partition=2,
        offset=41,
        key=key,
        value=value,
        headers=list(headers),
        timestamp=(1, 1_700_000_000_123),
    )


@pytest.mark.parametrize(
    "fmt, expected",
    [
        (DEFAULT_FORMAT, b"hello\n"),
        ("%s", b"hello"),
        ("%t [%p] at offset %o: key %k: %v\\n", b"orders [2] at offset 41: key k1: hello\n"),
        ("%T", b"1700000000123"),
        ("%K %S", b"2 5"),
        ("%h", b"h1=v1,h2="),
        ("100%% %v", b"100% hello"),
        ("a\\tb\\\\c\\r\\0\\x41", b"a\tb\\c\r\0A"),
        ("no tokens", b"no tokens"),
    ],
)
def test_tokens_and_escapes(fmt, expected):
    assert compile_format(fmt)(record()) == expected


def test_null_key_and_value_print_empty_with_length_minus_one():
    rendered = compile_format("[%k][%v] %K %S")(record(key=None, value=None))
    assert rendered == b"[][] -1 -1"


def test_binary_values_pass_through_untouched():
    blob = bytes(range(256))
    assert compile_format("%v")(record(value=blob)) == blob


@pytest.mark.parametrize(
    "fmt, message",
    [
        ("%z", "unknown format token %z"),
        ("%v%", "ends with a lone '%'"),
        ("%v\\", "ends with a lone"),
        ("\\q", "unknown escape \\q"),
        ("\\xZZ", "unknown escape \\x"),
    ],
)
def test_bad_formats_name_the_problem(fmt, message):
    with pytest.raises(FormatError) as info:
        compile_format(fmt)
    assert message in str(info.value)


def test_json_is_one_compact_line_with_every_field():
    line = record_json(record())
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {
        "topic": "orders",
        "partition": 2,
        "offset": 41,
        "timestamp": 1_700_000_000_123,
        "key": "k1",
        "value": "hello",
        "headers": [{"key": "h1", "value": "v1"}, {"key": "h2", "value": None}],
    }


def test_json_nulls_and_invalid_utf8():
    """Bytes that are not UTF-8 are written as base64, saying so, never replaced."""
    doc = json.loads(record_json(record(key=None, value=b"ok\xff", headers=())))
    assert doc["key"] is None and doc["headers"] == []
    assert doc["value"] == "b2v/" and doc["value_encoding"] == "base64"

"""The -o grammar: rpk's forms, kcat's and Kafka's words, and how positions resolve."""

import pytest

from kctl.shell.offsets import (
    END,
    START,
    Kind,
    OffsetRange,
    OffsetSyntaxError,
    Position,
    duration_ms,
    parse,
    resolve,
    resolve_stop,
    timestamp_ms,
)

pytestmark = pytest.mark.unit

NOW = 1_700_000_000_000  # 2023-11-14T22:13:20Z


def at(ms: int) -> Position:
    return Position(Kind.TIME, ms)


def offset(n: int) -> Position:
    return Position(Kind.OFFSET, n)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("start", OffsetRange(START)),
        ("oldest", OffsetRange(START)),
        ("beginning", OffsetRange(START)),
        ("earliest", OffsetRange(START)),
        ("end", OffsetRange(END)),
        ("newest", OffsetRange(END)),
        ("latest", OffsetRange(END)),
        ("42", OffsetRange(offset(42))),
        ("42:", OffsetRange(offset(42))),
        ("+5", OffsetRange(Position(Kind.AFTER_START, 5))),
        ("-5", OffsetRange(Position(Kind.BEFORE_END, 5))),
        (":end", OffsetRange(START, END)),
        (":30", OffsetRange(START, offset(30))),
        ("10:30", OffsetRange(offset(10), offset(30))),
        ("10-30", OffsetRange(offset(10), offset(30))),
        ("-5:end", OffsetRange(Position(Kind.BEFORE_END, 5), END)),
        ("start:end", OffsetRange(START, END)),
    ],
)
def test_offset_forms(text, expected):
    assert parse(text, NOW) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("@1700000000123", OffsetRange(at(1_700_000_000_123))),
        ("@1700000000", OffsetRange(at(1_700_000_000_000))),
        ("@2023-11-14", OffsetRange(at(1_699_920_000_000))),
        ("@2023-11-14T22:13:20Z", OffsetRange(at(NOW))),
        ("@2023-11-14T23:13:20+01:00", OffsetRange(at(NOW))),
        ("@2023-11-14T22:13:20.5Z", OffsetRange(at(NOW + 500))),
        ("@-10m", OffsetRange(at(NOW - 600_000))),
        ("@-1h30m", OffsetRange(at(NOW - 5_400_000))),
        ("@-10m:", OffsetRange(at(NOW - 600_000))),
        ("@:1700000000", OffsetRange(START, at(NOW))),
        ("@-10m:end", OffsetRange(at(NOW - 600_000), END)),
        ("@1700000000:1700000060", OffsetRange(at(NOW), at(NOW + 60_000))),
        ("@2023-11-14:1h", OffsetRange(at(1_699_920_000_000), at(1_699_923_600_000))),
        ("@2023-11-14T22:13:20Z:90s", OffsetRange(at(NOW), at(NOW + 90_000))),
        ("@-48h:-24h", OffsetRange(at(NOW - 172_800_000), at(NOW - 86_400_000))),
        ("s@1700000000000", OffsetRange(at(NOW))),
        ("e@1700000000000", OffsetRange(START, at(NOW))),
    ],
)
def test_timestamp_forms(text, expected):
    assert parse(text, NOW) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "foo",
        "1.5",
        "--3",
        "5:start",
        "30:10",
        "10:+5",
        "@",
        "@:",
        "@abc",
        "@123",
        "@1h",
        "@2023-13-45",
        "@1700000060:1700000000",
        "@12345678901234567890",
    ],
)
def test_invalid_specs_raise_with_a_hint(text):
    with pytest.raises(OffsetSyntaxError) as info:
        parse(text, NOW)
    assert repr(text) in str(info.value) or text.lstrip("@") in str(info.value)


def test_durations_follow_go_syntax():
    assert duration_ms("1m3ms") == 60_003
    assert duration_ms("-1.5h") == -5_400_000
    assert duration_ms("250us") == 0


def test_naive_dates_are_utc():
    assert timestamp_ms("1970-01-02") == 86_400_000


@pytest.mark.parametrize(
    "position, expected",
    [
        (START, 10),
        (END, 50),
        (offset(30), 30),
        (offset(5), 10),
        (offset(99), 50),
        (Position(Kind.AFTER_START, 5), 15),
        (Position(Kind.AFTER_START, 500), 50),
        (Position(Kind.BEFORE_END, 5), 45),
        (Position(Kind.BEFORE_END, 500), 10),
    ],
)
def test_resolve_clamps_into_the_log(position, expected):
    assert resolve(position, low=10, high=50) == expected


def test_resolve_timestamps_uses_the_looked_up_offset():
    assert resolve(at(NOW), 10, 50, time_offset=33) == 33
    assert resolve(at(NOW), 10, 50, time_offset=-1) == 50  # no record that late: the end


def test_an_exact_stop_beyond_the_end_is_waited_for():
    assert resolve_stop(offset(99), 10, 50) == 99
    assert resolve_stop(END, 10, 50) == 50

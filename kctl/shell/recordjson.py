"""The JSON record: what `kctl consume --json` writes and `kctl produce --input-format json`
reads back, one object per line, so `consume a --json -e | produce b -J json` copies a topic
without losing a byte.

    {"topic": "a", "partition": 2, "offset": 41, "timestamp": 1700000000123,
     "key": "user-7", "value": "AAEC/w==", "value_encoding": "base64",
     "headers": [{"key": "trace", "value": "x"}, {"key": "trace", "value": null}]}

Bytes that are valid UTF-8 are written as text, so readable records stay readable and keep
the shape --json always had; any other bytes are written as base64, and the object says so
with `"key_encoding": "base64"` or `"value_encoding": "base64"` (a header's own object for a
header value). null stays null (no key, a tombstone, a header without a value). Headers are
a list, so their order and repeated names survive.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from typing import Any

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

BASE64 = "base64"
HEADERS_SHAPE = '"headers" must be a list of {"key": NAME, "value": TEXT} objects'

# What one record needs from produce(): value, key, and the other keyword arguments.
ProduceArgs = tuple[bytes | None, bytes | None, dict[str, Any]]


def put_bytes(doc: dict[str, Any], field: str, data: bytes | None) -> None:
    """Set doc[field] to `data` as text if it is UTF-8, else as base64 marked in field_encoding."""
    if data is None:
        doc[field] = None
        return
    try:
        doc[field] = data.decode()
    except UnicodeDecodeError:
        doc[field] = base64.b64encode(data).decode("ascii")
        doc[field + "_encoding"] = BASE64


def header_json(name: str, value: bytes | None) -> dict[str, Any]:
    """One header as its JSON object."""
    doc: dict[str, Any] = {"key": name}
    put_bytes(doc, "value", value)
    return doc


class BadRecord(ValueError):
    """Why one input line is not a record; JsonLines adds the line number."""


class JsonLines:
    """`kctl produce --input-format json`: input lines to produce() arguments.

    The first bad line ends the records, so those before it are still sent (and, in a
    transaction, committed), and is kept in `error` for the command to raise once they are
    delivered: nothing acknowledged is lost and nothing after the bad line is written. Lines
    are counted over the whole input, whatever batches it comes in, so the error names one.
    """

    def __init__(self, partition: int | None, headers: list[tuple[str, bytes]], partitions: int):
        self.partition = partition  # -p: wins over the records' partitions
        self.headers = headers  # -H: added after each record's own
        self.partitions = partitions  # the topic's partition count
        self.line = 0
        self.error: KctlError | None = None

    def records(self, lines: Iterable[bytes]) -> Iterator[ProduceArgs]:
        for line in lines:
            self.line += 1
            try:
                record = self._record(line)
            except BadRecord as exc:
                self.error = KctlError(f"input line {self.line}: {exc}", ExitCode.INVALID_INPUT)
                return
            yield record

    def _record(self, line: bytes) -> ProduceArgs:
        doc = _object(line)
        if "value" not in doc:
            raise BadRecord('no "value" (null for a record without one)')
        extra: dict[str, Any] = {}
        headers = _headers(doc) + self.headers
        if headers:
            extra["headers"] = headers
        partition = _integer(doc, "partition") if self.partition is None else self.partition
        if partition is not None:
            if not 0 <= partition < self.partitions:
                raise BadRecord(
                    f'"partition" {partition} is not one of the topic\'s 0..'
                    f"{self.partitions - 1} (-p P sends every record to P)"
                )
            extra["partition"] = partition
        timestamp = _integer(doc, "timestamp")
        if timestamp is not None and timestamp > 0:  # librdkafka's 0 is "now", as are -1 and null
            extra["timestamp"] = timestamp
        return _bytes(doc, "value"), _bytes(doc, "key"), extra


def _object(line: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as exc:
        ends = exc.pos >= len(exc.doc.rstrip("\r\n"))  # json's own line/column count the newline
        where = "at the end of the line" if ends else f"at column {exc.pos + 1}"
        raise BadRecord(f"not valid JSON: {exc.msg} {where}") from None
    except UnicodeDecodeError:
        raise BadRecord("not UTF-8 text") from None
    if type(doc) is not dict:
        raise BadRecord(f"not a JSON object but {_kind(doc)}")
    return doc


def _bytes(doc: dict[str, Any], field: str) -> bytes | None:
    """The bytes of doc[field], read as put_bytes wrote them."""
    data = doc.get(field)
    if data is None:
        return None
    if type(data) is not str:
        raise BadRecord(f'"{field}" must be a string or null, not {_kind(data)}')
    encoding = doc.get(field + "_encoding")
    if encoding is None:
        try:
            return data.encode()
        except UnicodeEncodeError:
            raise BadRecord(f'"{field}" holds a lone surrogate (\\ud800-\\udfff), not text') from None
    if encoding != BASE64:
        raise BadRecord(f'"{field}_encoding" must be "base64" or absent, not {json.dumps(encoding)}')
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error as exc:
        raise BadRecord(f'"{field}" is not base64 ({exc})') from None


def _headers(doc: dict[str, Any]) -> list[tuple[str, bytes | None]]:
    headers = doc.get("headers")
    if headers is None:
        return []
    if type(headers) is not list:
        raise BadRecord(HEADERS_SHAPE)
    pairs = []
    for number, header in enumerate(headers, 1):
        if type(header) is not dict or type(header.get("key")) is not str:
            raise BadRecord(HEADERS_SHAPE)
        try:
            pairs.append((header["key"], _bytes(header, "value")))
        except BadRecord as exc:
            raise BadRecord(f"header {number}: {exc}") from None
    return pairs


def _integer(doc: dict[str, Any], field: str) -> int | None:
    number = doc.get(field)
    if number is not None and type(number) is not int:
        raise BadRecord(f'"{field}" must be a whole number or null, not {_kind(number)}')
    return number


def _kind(value: object) -> str:
    """A JSON value's kind, for error messages: never the value itself, which may be huge."""
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "true or false",
        int: "a number",
        float: "a number",
    }.get(type(value), "null")

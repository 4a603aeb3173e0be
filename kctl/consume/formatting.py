"""Rendering consumed records: kcat/rpk `-f` format tokens, and one JSON object per record.

A format string is compiled once into a list of small functions, so rendering a record is a
single join over them: the consume loop stays cheap however rich the format is.

    %t topic   %p partition   %o offset   %T timestamp (ms)   %h headers (k=v,k=v)
    %k key     %K key length (-1: null)   %v / %s value   %S value length (-1: null)
    %d delivery count (share groups: 1 the first time, +1 for each delivery again)
    %% a percent sign;   escapes \\n \\t \\r \\0 \\\\ and \\xHH
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from kctl.kafka.record import Record
from kctl.shell.recordjson import header_json, put_bytes

DEFAULT_FORMAT = "%v\\n"

Part = Callable[[Record], bytes]


class FormatError(ValueError):
    pass


def _length(data: bytes | None) -> bytes:
    return b"-1" if data is None else str(len(data)).encode()


def _headers(record: Record) -> bytes:
    pairs = record.headers() or []
    return b",".join(name.encode() + b"=" + (value or b"") for name, value in pairs)


_TOKENS: dict[str, Part] = {
    "t": lambda r: r.topic().encode(),
    "p": lambda r: str(r.partition()).encode(),
    "o": lambda r: str(r.offset()).encode(),
    "k": lambda r: r.key() or b"",
    "K": lambda r: _length(r.key()),
    "v": lambda r: r.value() or b"",
    "s": lambda r: r.value() or b"",
    "S": lambda r: _length(r.value()),
    "T": lambda r: str(r.timestamp()[1]).encode(),
    "h": _headers,
    "d": lambda r: str(r.delivery_count()).encode(),
}
# Tokens only records handed out by a share group have.
_SHARE_TOKENS = {"d"}
_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "0": b"\0", "\\": b"\\"}


def compile_format(fmt: str, shared: bool = False) -> Callable[[Record], bytes]:
    """Compile a format string into a function from a record to its output bytes; ``shared``
    records come from a share group, the only ones with a delivery count (%d)."""
    parts = _parse(fmt, shared)
    literals = [p for p in parts if isinstance(p, bytes)]
    if len(literals) == len(parts):
        constant = b"".join(literals)
        return lambda record: constant
    funcs = [p if callable(p) else _literal(p) for p in parts]
    return lambda record: b"".join([f(record) for f in funcs])


def _literal(text: bytes) -> Part:
    return lambda record: text


_LEXEME = re.compile(r"%(?P<token>.?)|\\x(?P<hex>[0-9a-fA-F]{2})|\\(?P<escape>.?)|(?P<text>[^%\\]+)", re.S)


def _parse(fmt: str, shared: bool) -> list[bytes | Part]:
    """Split a format into literal byte runs and token functions."""
    parts: list[bytes | Part] = []
    literal = bytearray()
    for match in _LEXEME.finditer(fmt):
        token, hex_byte, escape, text = match.group("token", "hex", "escape", "text")
        if "" in (token, escape):
            raise FormatError(f"format {fmt!r} ends with a lone {match.group()!r}")
        if text is not None:
            literal += text.encode()
        elif hex_byte is not None:
            literal.append(int(hex_byte, 16))
        elif escape is not None:
            if escape not in _ESCAPES:
                raise FormatError(
                    f"unknown escape \\{escape} in format {fmt!r} (known: \\n \\t \\r \\0 \\\\ \\xHH)"
                )
            literal += _ESCAPES[escape]
        elif token == "%":
            literal += b"%"
        elif token in _SHARE_TOKENS and not shared:
            raise FormatError(f"format token %{token} (delivery count) needs --share-group")
        elif token in _TOKENS:
            if literal:
                parts.append(bytes(literal))
                literal.clear()
            parts.append(_TOKENS[token])
        else:
            raise FormatError(
                f"unknown format token %{token} in {fmt!r} (known: {' '.join('%' + t for t in _TOKENS)} %%)"
            )
    if literal:
        parts.append(bytes(literal))
    return parts


def record_json(record: Record) -> bytes:
    """One compact JSON line, lossless: UTF-8 keys, values and header values as text, others
    as base64 with a `*_encoding` field saying so (the scheme is in kctl.shell.recordjson)."""
    return json_line(record_doc(record))


def shared_record_json(record: Record) -> bytes:
    """record_json's line with the delivery count of a record a share group handed out."""
    return json_line(record_doc(record, shared=True))


def json_line(doc: dict) -> bytes:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def record_doc(record: Record, shared: bool = False) -> dict:
    """The record as --json shows it (with its delivery count when a share group handed it out)."""
    doc = _record_fields(record)
    if shared:
        doc["delivery_count"] = record.delivery_count()
    return doc


def _record_fields(record: Record) -> dict:
    doc = {
        "topic": record.topic(),
        "partition": record.partition(),
        "offset": record.offset(),
        "timestamp": record.timestamp()[1],
    }
    put_bytes(doc, "key", record.key())
    put_bytes(doc, "value", record.value())
    doc["headers"] = [header_json(k, v) for k, v in record.headers() or []]
    return doc

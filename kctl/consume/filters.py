"""`kctl consume --filter`: keep only the records whose key, value or headers match.

An expression names a field and compares it with text or a regular expression:

    key=TEXT          the key is exactly TEXT (its UTF-8 bytes)
    key~REGEX         the key matches REGEX somewhere (Python regex syntax, over bytes)
    value=TEXT        value~REGEX
    header.NAME=TEXT  a header named NAME has the value TEXT (any of them, when repeated)
    header.NAME~REGEX
    header.NAME       the record has a header named NAME

Every expression given must hold (AND). Expressions are compiled once; a record is tested by
a short list of byte comparisons, so filtering costs little next to rendering.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kctl.kafka.record import Record

Test = Callable[[Record], bool]
_EXPRESSION = re.compile(r"^(key|value|header\.(?P<name>[^=~]+))(?:(?P<op>[=~])(?P<operand>.*))?$", re.S)


class FilterSyntaxError(ValueError):
    pass


def compile_filters(expressions: list[str]) -> Test | None:
    """One test for all expressions (None when there are none: every record is kept)."""
    tests = [_compile(expression) for expression in expressions]
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    return lambda record: all(test(record) for test in tests)


def _compile(expression: str) -> Test:
    match = _EXPRESSION.match(expression)
    if match is None:
        raise FilterSyntaxError(
            f"invalid filter {expression!r}: expected key=TEXT, key~REGEX, value=TEXT, "
            "value~REGEX, header.NAME=TEXT, header.NAME~REGEX or header.NAME"
        )
    name, op, operand = match["name"], match["op"], match["operand"]
    if op is None and name is None:
        raise FilterSyntaxError(f"invalid filter {expression!r}: {expression}=TEXT or {expression}~REGEX")
    matches = _matcher(expression, op, operand)
    if name is None:
        field = _key if expression.startswith("key") else _value
        return lambda record: matches(field(record))
    return _header_test(name, matches)


def _matcher(expression: str, op: str | None, operand: str | None) -> Callable[[bytes | None], bool]:
    if op is None:
        return lambda data: True
    assert operand is not None  # the pattern captures an operand with every operator
    if op == "=":
        wanted = operand.encode()
        return lambda data: data == wanted
    try:
        pattern = re.compile(operand.encode())
    except re.error as exc:
        raise FilterSyntaxError(f"invalid filter {expression!r}: bad regular expression: {exc}") from None
    return lambda data: data is not None and pattern.search(data) is not None


def _key(record: Record) -> bytes | None:
    return record.key()


def _value(record: Record) -> bytes | None:
    return record.value()


def _header_test(name: str, matches: Callable[[bytes | None], bool]) -> Test:
    def test(record: Record) -> bool:
        return any(header == name and matches(value) for header, value in record.headers() or ())

    return test

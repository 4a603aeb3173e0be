"""What the codecs share: the errors they raise and how they name the part of a value at fault,
as a JSON Pointer ("/address/zip", "/items/3"; "/" is the record itself)."""

import json
from typing import Any


class RecordDoesNotFit(ValueError):
    """A value the schema cannot hold: `field` is the JSON Pointer of the part at fault and
    `reason` says what is wrong with it."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"field {field}: {reason}")
        self.field = field
        self.reason = reason


class NoSuchMessage(ValueError):
    """A Protobuf message asked for by name or by message indexes that the schema's file lacks."""


class Misfit(Exception):
    """Raised where a value stops fitting and passed up through the containers, each adding
    its key: the path is built only for a record that fails, never on the way down."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []  # innermost first

    def at(self, key: str) -> "Misfit":
        self.path.append(key)
        return self

    def does_not_fit(self) -> RecordDoesNotFit:
        return RecordDoesNotFit(pointer(reversed(self.path)), self.reason)


def pointer(keys: Any) -> str:
    """A JSON Pointer (RFC 6901: '~' and '/' escaped in keys); "/" for the whole value."""
    escaped = [str(key).replace("~", "~0").replace("/", "~1") for key in keys]
    return "/" + "/".join(escaped)


def describe(value: Any) -> str:
    """A value as the user wrote it, shortened: 'string "abc"', 'number 5', 'an object'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return f"string {text if len(text) <= 40 else text[:37] + '...'}"
    if isinstance(value, bytes | bytearray):
        return f"{len(value)} bytes"
    return _CONTAINERS.get(type(value), type(value).__name__)


_CONTAINERS: dict[type, str] = {dict: "an object", list: "an array"}
TOO_DEEP = "nested too deeply"

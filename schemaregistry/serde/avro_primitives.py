"""The checks of JSON values against Avro's primitive types and decimals: each returns the
value as fastavro's writer takes it (bytes as bytes, decimals as Decimals) or raises Misfit."""

import math
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from schemaregistry.serde.errors import Misfit, describe

# a compiled check: a JSON value in, the value fastavro's writer takes out (or Misfit)
Check = Callable[[Any], Any]
_INT_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
_FLOAT32_MAX = 3.4028234663852886e38


def decimal_check(schema: Mapping[str, Any]) -> Check:
    precision, scale = schema["precision"], schema.get("scale", 0)
    quantum = Decimal(1).scaleb(-scale)
    shape = f"decimal({precision}, {scale})"

    def check(value: Any) -> Any:
        if type(value) not in (int, float, str):
            raise Misfit(f"expected a number for {shape}, got {describe(value)}")
        try:
            number = Decimal(str(value))
            exact = number.quantize(quantum)
        except InvalidOperation:
            raise Misfit(f"{describe(value)} is not a number that fits {shape}") from None
        if exact != number:
            raise Misfit(f"{value} has more than {scale} digits after the point ({shape})")
        if len(exact.as_tuple().digits) > precision:
            raise Misfit(f"{value} has more than {precision} digits ({shape})")
        return exact

    return check


def as_bytes(value: Any, what: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if type(value) is not str:
        raise Misfit(f"expected a string (one character per byte) for {what}, got {describe(value)}")
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        raise Misfit(f"{what} is one character per byte: no characters above U+00FF") from None


def _null(value: Any) -> Any:
    if value is not None:
        raise Misfit(f"expected null, got {describe(value)}")
    return value


def _boolean(value: Any) -> Any:
    if type(value) is not bool:
        raise Misfit(f"expected true or false, got {describe(value)}")
    return value


def _integer(kind: str) -> Check:
    low, high = _INT_RANGES[kind]

    def check(value: Any) -> Any:
        if type(value) is not int:
            raise Misfit(f"expected an integer ({kind}), got {describe(value)}")
        if not low <= value <= high:
            raise Misfit(f"{value} is out of range for an Avro {kind} ({low} to {high})")
        return value

    return check


def _floating(kind: str) -> Check:
    largest = _FLOAT32_MAX if kind == "float" else math.inf

    def check(value: Any) -> Any:
        if type(value) not in (int, float):
            raise Misfit(f"expected a number ({kind}), got {describe(value)}")
        try:
            number = float(value)
        except OverflowError:
            raise Misfit(f"{value} is out of range for an Avro {kind}") from None
        if math.isfinite(number) and abs(number) > largest:
            raise Misfit(f"{value} is out of range for an Avro {kind}")
        return number

    return check


def _string(value: Any) -> Any:
    if type(value) is not str:
        raise Misfit(f"expected a string, got {describe(value)}")
    return value


PRIMITIVE_CHECKS: dict[str, Check] = {
    "null": _null,
    "boolean": _boolean,
    "int": _integer("int"),
    "long": _integer("long"),
    "float": _floating("float"),
    "double": _floating("double"),
    "string": _string,
    "bytes": lambda value: as_bytes(value, "bytes"),
}

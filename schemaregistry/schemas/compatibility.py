"""Compatibility levels as Confluent's CompatibilityChecker and SchemaValidatorBuilder apply
them: which schema must read which, against which earlier versions, and how the answer is
worded in a 409 body or a verbose compatibility check."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from schemaregistry.schemas import avro_compat, json_compat, protobuf_compat
from schemaregistry.schemas.model import Incompatibility, ParsedSchema, TooComplex

COMPATIBILITY_LEVELS: tuple[str, ...] = (
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
)
DIFFERENT_SCHEMA_TYPE = "Incompatible because of different schema type"
MAX_SCHEMA_SIZE_FOR_LOGGING = 10 * 1024

# isBackwardCompatible(this, previous): what stops `this` reading data written with `previous`.
# Avro resolves with `this` as the reader; JSON Schema and Protobuf diff previous -> this.
BACKWARD_CHECKS: dict[str, Callable[[ParsedSchema, ParsedSchema], list[Incompatibility]]] = {
    "AVRO": avro_compat.is_backward_compatible,
    "JSON": json_compat.is_backward_compatible,
    "PROTOBUF": protobuf_compat.is_backward_compatible,
}


def compatibility_messages(
    level: str, new: ParsedSchema, previous: Sequence[tuple[int, ParsedSchema]]
) -> list[str]:
    """Why `new` may not follow `previous` (version, schema; oldest first) at `level`; empty
    when it may. A transitive level checks the newest version first and stops at the first
    one it fails against, as Confluent does."""
    if level not in COMPATIBILITY_LEVELS:
        raise ValueError(f"unknown compatibility level {level!r}")
    if level == "NONE":
        return []
    direction, _, transitive = level.partition("_")
    against = list(reversed(previous)) if transitive else list(previous[-1:])
    for version, old in against:
        messages = _check(direction, new, version, old)
        if messages:
            return [*messages, f"{{validateFields: 'false', compatibility: '{level}'}}"]
    return []


def _check(direction: str, new: ParsedSchema, version: int, old: ParsedSchema) -> list[str]:
    if new.schema_type != old.schema_type:
        return [f"{DIFFERENT_SCHEMA_TYPE}: {new.schema_type} after {old.schema_type} (version {version})"]
    backward = BACKWARD_CHECKS[new.schema_type]
    try:
        if direction == "BACKWARD":
            return _worded(backward(new, old), "new", "old", version, old)
        if direction == "FORWARD":
            return _worded(backward(old, new), "old", "new", version, old)
        # FULL: Confluent's mutualReadStrategy names the old schema only after the backward half
        return _worded(backward(old, new), "old", "new", None, old) + _worded(
            backward(new, old), "new", "old", version, old
        )
    except TooComplex as exc:
        return _worded([], "new", "old", version, old, f"The schemas cannot be compared: {exc}")


def _worded(
    found: list[Incompatibility],
    reader: str,
    writer: str,
    version: int | None,
    old: ParsedSchema,
    *extra: str,
) -> list[str]:
    messages = [item.render(reader, writer) for item in found] + list(extra)
    if messages and version is not None:
        shown = old.text
        if len(shown) <= MAX_SCHEMA_SIZE_FOR_LOGGING:
            schema = f"{{oldSchema: '{shown}'}}"
        else:
            schema = f"{{oldSchema: <truncated> '{shown[:MAX_SCHEMA_SIZE_FOR_LOGGING]}...'}}"
        messages += [f"{{oldSchemaVersion: {version}}}", schema]
    return messages

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
    """The messages against one earlier version: what is wrong, then that version and its
    text (Confluent adds them after the backward half of FULL only; here they follow a failed
    forward half too, so a FULL_TRANSITIVE answer always says which version failed)."""
    if new.schema_type != old.schema_type:
        return [f"{DIFFERENT_SCHEMA_TYPE}: {new.schema_type} after {old.schema_type} (version {version})"]
    backward = BACKWARD_CHECKS[new.schema_type]
    try:
        messages: list[str] = []
        if direction in ("FORWARD", "FULL"):  # the old schema reads the new one's data
            messages += [found.render("old", "new") for found in backward(old, new)]
        if direction in ("BACKWARD", "FULL"):  # the new schema reads the old one's data
            messages += [found.render("new", "old") for found in backward(new, old)]
    except TooComplex as exc:
        messages = [f"The schemas cannot be compared: {exc}"]
    if not messages:
        return []
    if len(old.text) > MAX_SCHEMA_SIZE_FOR_LOGGING:
        shown = f"<truncated> '{old.text[:MAX_SCHEMA_SIZE_FOR_LOGGING]}...'"
    else:
        shown = f"'{old.text}'"
    return [*messages, f"{{oldSchemaVersion: {version}}}", f"{{oldSchema: {shown}}}"]

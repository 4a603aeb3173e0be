"""JSON Schema bodies: UTF-8 JSON, validated by jsonschema on the way in."""

import json
from typing import TYPE_CHECKING, Any

from schemaregistry.serde.errors import TOO_DEEP, RecordDoesNotFit, pointer
from schemaregistry.wire import BadPayload

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


class JsonSchemaCodec:
    """UTF-8 JSON bodies, validated on the way in by the schema's validator (jsonschema's for
    the draft its $schema names, Draft 7 when it names none, its references resolved: what
    schemas.json_schema.JsonParsed holds). Formats are not asserted, as by default in JSON
    Schema. Decoding only parses: a record already in a topic is shown as it is, valid or not."""

    def __init__(self, validator: "Validator") -> None:
        from jsonschema.exceptions import best_match

        self._validator = validator
        self._best_match = best_match

    def encode(self, value: Any) -> bytes:
        try:
            error = self._best_match(self._validator.iter_errors(value))
        except RecursionError:
            raise RecordDoesNotFit("/", TOO_DEEP) from None
        if error is not None:
            raise RecordDoesNotFit(pointer(error.absolute_path), error.message)
        try:
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        except UnicodeEncodeError:
            raise RecordDoesNotFit("/", "a string holds a lone surrogate: not UTF-8") from None
        except ValueError as error:  # NaN or Infinity, which JSON has no way to write
            raise RecordDoesNotFit("/", str(error)) from None

    def decode(self, body: bytes) -> Any:
        try:
            return json.loads(body)
        except (ValueError, RecursionError) as error:
            raise BadPayload(f"not UTF-8 JSON: {error}") from None

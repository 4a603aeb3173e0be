"""JSON Schema compatibility as Confluent's JsonSchema.isBackwardCompatible decides it: the
differences from the previous schema (original) to the one being checked (update) that are not
compatible changes, worded as Confluent's json.diff.Difference words them."""

from __future__ import annotations

from schemaregistry.schemas.json_diff import COMPATIBLE_CHANGES, differences
from schemaregistry.schemas.model import Incompatibility, ParsedSchema


def is_backward_compatible(this: ParsedSchema, previous: ParsedSchema) -> list[Incompatibility]:
    return [
        _describe(kind, path) for kind, path in differences(previous, this) if kind not in COMPATIBLE_CHANGES
    ]


# Confluent's json.diff.Difference wording, by the group each incompatible type is in.
_GROUPS = (
    (
        "MAXIMUM_ADDED MINIMUM_ADDED EXCLUSIVE_MAXIMUM_ADDED EXCLUSIVE_MINIMUM_ADDED MULTIPLE_OF_ADDED "
        "MAX_LENGTH_ADDED MIN_LENGTH_ADDED PATTERN_ADDED REQUIRED_ATTRIBUTE_ADDED MAX_PROPERTIES_ADDED "
        "MIN_PROPERTIES_ADDED DEPENDENCY_ARRAY_ADDED DEPENDENCY_SCHEMA_ADDED MAX_ITEMS_ADDED MIN_ITEMS_ADDED "
        "UNIQUE_ITEMS_ADDED ADDITIONAL_ITEMS_REMOVED ADDITIONAL_PROPERTIES_REMOVED",
        "The keyword at path '{path}' in the {reader} schema is not present in the {writer} schema",
    ),
    (
        "MIN_LENGTH_INCREASED MINIMUM_INCREASED EXCLUSIVE_MINIMUM_INCREASED MIN_PROPERTIES_INCREASED "
        "MULTIPLE_OF_EXPANDED MIN_ITEMS_INCREASED",
        "The value at path '{path}' in the {reader} schema is more than its value in the {writer} schema",
    ),
    (
        "MAX_LENGTH_DECREASED MAXIMUM_DECREASED MAX_ITEMS_DECREASED EXCLUSIVE_MAXIMUM_DECREASED "
        "MAX_PROPERTIES_DECREASED",
        "The value at path '{path}' in the {reader} schema is less than its value in the {writer} schema",
    ),
    (
        "PATTERN_CHANGED MULTIPLE_OF_CHANGED DEPENDENCY_ARRAY_CHANGED",
        "The value at path '{path}' is different between the {reader} and {writer} schema",
    ),
    (
        "ADDITIONAL_ITEMS_NARROWED ENUM_ARRAY_NARROWED SUM_TYPE_NARROWED ADDITIONAL_PROPERTIES_NARROWED",
        "An array or combined type at path '{path}' has fewer elements in the {reader} schema "
        "than the {writer} schema",
    ),
    (
        "DEPENDENCY_ARRAY_EXTENDED PRODUCT_TYPE_EXTENDED SUM_TYPE_EXTENDED NOT_TYPE_EXTENDED",
        "An array or combined type at path '{path}' has more elements in the {reader} schema "
        "than the {writer} schema",
    ),
    (
        "TYPE_CHANGED TYPE_NARROWED COMBINED_TYPE_CHANGED COMBINED_TYPE_SUBSCHEMAS_CHANGED "
        "ENUM_ARRAY_CHANGED",
        "A type at path '{path}' is different between the {reader} schema and the {writer} schema",
    ),
    (
        "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
        "The {reader} schema has an open content model and has a property or item at path '{path}' "
        "which is missing in the {writer} schema",
    ),
    (
        "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "The {reader} schema has an unopen content model and has a required property at path '{path}' "
        "which is missing in the {writer} schema",
    ),
    (
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "The {reader} schema has a closed content model and is missing a property or item present "
        "at path '{path}' in the {writer} schema",
    ),
    (
        "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL "
        "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "A property or item is missing in the {reader} schema but present at path '{path}' "
        "in the {writer} schema and is not covered by its partially open content model",
    ),
    (
        "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL "
        "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "The {reader} schema has a property or item at path '{path}' which is missing in the {writer} "
        "schema and is not covered by its partially open content model",
    ),
    (
        "SCHEMA_ADDED",  # Confluent gives this one no description
        "The {reader} schema has a schema at path '{path}' which is missing in the {writer} schema",
    ),
)
TEMPLATES = {kind: template for kinds, template in _GROUPS for kind in kinds.split()}


def _describe(kind: str, path: str) -> Incompatibility:
    return Incompatibility(kind, TEMPLATES[kind], {"path": path})

"""Confluent Schema Registry's errors: an HTTP status, an error code and a message, answered as
`{"error_code": ..., "message": ...}`. Codes and wording follow Confluent's `Errors.java`, so
clients that branch on `error_code` (confluent-kafka's serializers do) behave as against it."""

from __future__ import annotations

from httpservice.errors import ServiceError


class RegistryError(ServiceError):
    """An answer of the registry other than success."""


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    return RegistryError(
        404, 40403, "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    )


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
    )


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
    )


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40406,
        f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40407,
        f"Subject '{subject}' Version {version} was not deleted first before being permanently deleted",
    )


def subject_config_not_found(subject: str) -> RegistryError:
    return RegistryError(
        404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured"
    )


def subject_mode_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible(subject: str, messages: list[str]) -> RegistryError:
    details = "[" + ", ".join(messages) + "]"
    return RegistryError(
        409,
        409,
        f'Schema being registered is incompatible with an earlier schema for subject "{subject}", '
        f"details: {details}",
    )


def invalid_schema(reason: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema {reason}")


def invalid_version(version: str) -> RegistryError:
    return RegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. Allowed values are between "
        '[1, 2^31-1] and the string "latest"',
    )


def invalid_compatibility_level(level: object) -> RegistryError:
    return RegistryError(
        422,
        42203,
        f"Invalid compatibility level {level}. Valid values are none, backward, forward, full, "
        "backward_transitive, forward_transitive, and full_transitive",
    )


def invalid_mode(mode: object) -> RegistryError:
    return RegistryError(422, 42204, f"Invalid mode {mode}. Valid values are READWRITE, READONLY and IMPORT")


def read_only(subject: str | None) -> RegistryError:
    where = f"Subject {subject}" if subject else "The registry"
    return RegistryError(422, 42205, f"{where} is in read-only mode")


def referenced(subject: str, version: int) -> RegistryError:
    return RegistryError(
        422, 42206, f"One or more references exist to the schema {{subject={subject},version={version}}}."
    )


def store_error(reason: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error while storing the schema: {reason}")


def store_timeout(reason: str) -> RegistryError:
    return RegistryError(500, 50002, f"Operation timed out: {reason}")

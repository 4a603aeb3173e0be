"""The registry's operations, as Confluent Schema Registry defines them, on the `_schemas` store:
what each REST call reads or decides. HTTP is the API module's business; ids, versions,
compatibility, soft and permanent deletes and modes are this one's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from schemaregistry import errors, schemas
from schemaregistry.records import (
    GLOBAL,
    ConfigKey,
    DeleteSubjectKey,
    ModeKey,
    Record,
    Reference,
    SchemaKey,
    SchemaValue,
)
from schemaregistry.state import RegistryState, StoredSchema

T = TypeVar("T")
DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"
MODES = ("READWRITE", "READONLY", "IMPORT")
LATEST = -1
MAX_VERSION = 2**31 - 1
MAX_REFERENCE_DEPTH = 32
PARSED_CACHE_SIZE = 4096  # lookups and checks of never-registered schemas must not grow it forever


class Store(Protocol):
    """What the registry needs of its storage (KafkaStore, or a fake in unit tests): queries
    answered on an up-to-date state, and decisions whose records are committed as one."""

    def read(self, query: Callable[[RegistryState], T]) -> T: ...

    def write(self, decide: Callable[[RegistryState], tuple[list[Record], T]]) -> T: ...


@dataclass(frozen=True)
class NewSchema:
    """A schema as a request gives it."""

    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()

    def stored(self) -> StoredSchema:
        return StoredSchema(self.schema_type, self.schema, self.references)


def parse_version(text: str | int) -> int:
    """A version path segment: 1 to 2^31-1, or "latest" / -1 (LATEST); else 42202."""
    if str(text) in ("latest", "-1"):
        return LATEST
    try:
        number = int(text)
    except ValueError:
        raise errors.invalid_version(str(text)) from None
    if not 1 <= number <= MAX_VERSION:
        raise errors.invalid_version(str(text))
    return number


class SchemaRegistry:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._parsed: dict[StoredSchema, schemas.ParsedSchema] = {}

    # -- subjects and versions ---------------------------------------------------------------
    def subjects(self, deleted: bool = False, deleted_only: bool = False, prefix: str = "") -> list[str]:
        def query(state: RegistryState) -> list[str]:
            listed = state.subjects(deleted or deleted_only)
            if deleted_only:
                listed = [s for s in listed if s not in state.subjects()]
            return [s for s in listed if s.startswith(prefix)]

        return self.store.read(query)

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        return [v.version for v in self.store.read(lambda state: _versions(state, subject, deleted))]

    def version(self, subject: str, version: int, deleted: bool = False) -> SchemaValue:
        return self.store.read(lambda state: _version(state, subject, version, deleted))

    def schema_by_id(self, schema_id: int) -> tuple[StoredSchema, list[SchemaValue]]:
        """The schema with this id and the subject versions that use it (soft-deleted ones too:
        a deserializer must still read records written with them)."""

        def query(state: RegistryState) -> tuple[StoredSchema, list[SchemaValue]]:
            usages = state.usages(schema_id, deleted=True)
            if schema_id not in state.schemas or not usages:
                raise errors.schema_not_found(schema_id)
            return state.schemas[schema_id], usages

        return self.store.read(query)

    def lookup(self, subject: str, new: NewSchema, deleted: bool = False) -> SchemaValue:
        parsed = self._parse_new(new)

        def query(state: RegistryState) -> SchemaValue:
            versions = _versions(state, subject, deleted)
            for value in reversed(versions):
                if self._same(state, value, parsed, new.references):
                    return value
            raise errors.schema_not_found()

        return self.store.read(query)

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """The ids of the live schemas that refer to this subject version."""
        return self.store.read(lambda state: sorted({v.id for v in state.referrers(subject, version)}))

    # -- registering -------------------------------------------------------------------------
    def register(
        self, subject: str, new: NewSchema, schema_id: int | None = None, version: int | None = None
    ) -> SchemaValue:
        """The subject version for this schema: the existing one if the schema is already live
        under the subject, else a new version, compatible with the earlier ones as the
        subject's level asks. The id is the one the same schema has under any subject, else the
        next free one (or the given one, in IMPORT mode)."""
        parsed = self._parse_new(new)

        def decide(state: RegistryState) -> tuple[list[Record], SchemaValue]:
            mode = _mode(state, subject)
            if mode == "READONLY":
                raise errors.read_only(subject)
            if (schema_id is not None or version is not None) and mode != "IMPORT":
                raise errors.RegistryError(
                    422, 42205, f"Subject {subject} is not in import mode: an id or version cannot be given"
                )
            live = state.subject_versions(subject)
            for value in reversed(live):
                if self._same(state, value, parsed, new.references) and schema_id in (None, value.id):
                    return [], value
            if mode != "IMPORT":
                self._check_compatible(state, subject, parsed, live)
            value = SchemaValue(
                subject=subject,
                version=version or _next_version(state, subject),
                id=schema_id or self._id_for(state, parsed, new.references),
                schema=new.schema,
                schema_type=new.schema_type,
                references=new.references,
            )
            return [Record(SchemaKey(subject, value.version), value)], value

        return self.store.write(decide)

    def check(self, subject: str, new: NewSchema, version: int | None) -> list[str]:
        """Why the schema could not be registered under the subject: against one version (or
        LATEST), or against all of them (None) whatever the level's transitivity."""
        parsed = self._parse_new(new)

        def query(state: RegistryState) -> list[str]:
            live = state.subject_versions(subject)
            if version is None:
                against = live
            elif version == LATEST:
                against = live[-1:]
            else:
                against = [_version(state, subject, version, deleted=False)]
            level = _compatibility(state, subject)
            if version is None and level in ("BACKWARD", "FORWARD", "FULL"):
                level += "_TRANSITIVE"
            return self._messages(state, level, parsed, against)

        return self.store.read(query)

    # -- deleting ----------------------------------------------------------------------------
    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        def decide(state: RegistryState) -> tuple[list[Record], list[int]]:
            if _mode(state, subject) == "READONLY":
                raise errors.read_only(subject)
            every = state.subject_versions(subject, deleted=True)
            if not every:
                raise errors.subject_not_found(subject)
            live = [v for v in every if not v.deleted]
            for value in live if not permanent else every:
                if state.referrers(subject, value.version):
                    raise errors.referenced(subject, value.version)
            if not permanent:
                if not live:
                    raise errors.subject_soft_deleted(subject)
                records = [Record(SchemaKey(subject, v.version), _deleted(v)) for v in live]
                records.append(Record(DeleteSubjectKey(subject), live[-1].version))
                return records, [v.version for v in live]
            if live:
                raise errors.subject_not_soft_deleted(subject)
            records = [Record(SchemaKey(subject, v.version), None) for v in every]
            records += [
                Record(DeleteSubjectKey(subject), None),
                Record(ConfigKey(subject), None),
                Record(ModeKey(subject), None),
            ]
            return records, [v.version for v in every]

        return self.store.write(decide)

    def delete_version(self, subject: str, version: int, permanent: bool) -> int:
        def decide(state: RegistryState) -> tuple[list[Record], int]:
            if _mode(state, subject) == "READONLY":
                raise errors.read_only(subject)
            value = _version(state, subject, version, deleted=permanent)
            if state.referrers(subject, value.version):
                raise errors.referenced(subject, value.version)
            if not permanent:
                return [Record(SchemaKey(subject, value.version), _deleted(value))], value.version
            if not value.deleted:
                raise errors.version_not_soft_deleted(subject, value.version)
            return [Record(SchemaKey(subject, value.version), None)], value.version

        return self.store.write(decide)

    # -- config and mode ---------------------------------------------------------------------
    def compatibility(self, subject: str | None, default_to_global: bool = False) -> str:
        def query(state: RegistryState) -> str:
            if subject is not GLOBAL and subject not in state.configs and not default_to_global:
                raise errors.subject_config_not_found(subject)
            return _compatibility(state, subject)

        return self.store.read(query)

    def set_compatibility(self, subject: str | None, level: object) -> str:
        if not isinstance(level, str) or level.upper() not in schemas.COMPATIBILITY_LEVELS:
            raise errors.invalid_compatibility_level(level)
        chosen = level.upper()
        return self.store.write(lambda state: ([Record(ConfigKey(subject), chosen)], chosen))

    def delete_compatibility(self, subject: str | None) -> str:
        def decide(state: RegistryState) -> tuple[list[Record], str]:
            if subject is not GLOBAL and subject not in state.configs:
                raise errors.subject_config_not_found(subject)
            return [Record(ConfigKey(subject), None)], _compatibility(state, subject)

        return self.store.write(decide)

    def mode(self, subject: str | None, default_to_global: bool = False) -> str:
        def query(state: RegistryState) -> str:
            if subject is not GLOBAL and subject not in state.modes and not default_to_global:
                raise errors.subject_mode_not_found(subject)
            return _mode(state, subject)

        return self.store.read(query)

    def set_mode(self, subject: str | None, mode: object, force: bool = False) -> str:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        chosen = mode.upper()

        def decide(state: RegistryState) -> tuple[list[Record], str]:
            has_schemas = bool(state.subject_versions(subject) if subject else state.subjects())
            if chosen == "IMPORT" and has_schemas and not force:
                raise errors.RegistryError(
                    422, 42205, "Cannot import since found existing subjects; use force=true to go on"
                )
            return [Record(ModeKey(subject), chosen)], chosen

        return self.store.write(decide)

    def delete_mode(self, subject: str) -> str:
        def decide(state: RegistryState) -> tuple[list[Record], str]:
            if subject not in state.modes:
                raise errors.subject_mode_not_found(subject)
            return [Record(ModeKey(subject), None)], _mode(state, GLOBAL)

        return self.store.write(decide)

    # -- schemas -----------------------------------------------------------------------------
    def _parse_new(self, new: NewSchema) -> schemas.ParsedSchema:
        if new.schema_type not in schemas.SCHEMA_TYPES:
            raise errors.invalid_schema(
                f"type {new.schema_type}: valid types are {', '.join(schemas.SCHEMA_TYPES)}"
            )
        return self.store.read(lambda state: self.parsed(state, new.stored()))

    def parsed(self, state: RegistryState, stored: StoredSchema) -> schemas.ParsedSchema:
        """The schema parsed with its references resolved (cached: schemas never change)."""
        cached = self._parsed.get(stored)
        if cached is None:
            references = _resolve(state, stored.references)
            try:
                cached = schemas.parse(stored.schema_type, stored.schema, references)
            except schemas.InvalidSchema as exc:
                raise errors.invalid_schema(f"{stored.schema}, details: {exc}") from None
            if len(self._parsed) >= PARSED_CACHE_SIZE:
                del self._parsed[next(iter(self._parsed))]
            self._parsed[stored] = cached
        return cached

    def _same(
        self,
        state: RegistryState,
        value: SchemaValue,
        parsed: schemas.ParsedSchema,
        references: Sequence[Reference],
    ) -> bool:
        if value.schema_type != parsed.schema_type or tuple(value.references) != tuple(references):
            return False
        stored = state.schemas.get(value.id) or StoredSchema(
            value.schema_type, value.schema, value.references
        )
        return self.parsed(state, stored).canonical == parsed.canonical

    def _id_for(
        self, state: RegistryState, parsed: schemas.ParsedSchema, references: Sequence[Reference]
    ) -> int:
        for versions in state.versions.values():
            for value in versions.values():
                if self._same(state, value, parsed, references):
                    return value.id
        return state.max_id + 1

    def _check_compatible(
        self, state: RegistryState, subject: str, parsed: schemas.ParsedSchema, live: list[SchemaValue]
    ) -> None:
        messages = self._messages(state, _compatibility(state, subject), parsed, live)
        if messages:
            raise errors.incompatible(subject, messages)

    def _messages(
        self, state: RegistryState, level: str, parsed: schemas.ParsedSchema, against: list[SchemaValue]
    ) -> list[str]:
        previous = [
            (v.version, self.parsed(state, StoredSchema(v.schema_type, v.schema, v.references)))
            for v in against
        ]
        return schemas.compatibility_messages(level, parsed, previous)


def _versions(state: RegistryState, subject: str, deleted: bool) -> list[SchemaValue]:
    versions = state.subject_versions(subject, deleted)
    if not versions:
        raise errors.subject_not_found(subject)
    return versions


def _version(state: RegistryState, subject: str, version: int, deleted: bool) -> SchemaValue:
    versions = _versions(state, subject, deleted=True)
    if version == LATEST:
        live = [v for v in versions if deleted or not v.deleted]
        if not live:
            raise errors.subject_not_found(subject)
        return live[-1]
    for value in versions:
        if value.version == version:
            if value.deleted and not deleted:
                raise errors.version_not_found(version)
            return value
    raise errors.version_not_found(version)


def _next_version(state: RegistryState, subject: str) -> int:
    return max((v.version for v in state.subject_versions(subject, deleted=True)), default=0) + 1


def _deleted(value: SchemaValue) -> SchemaValue:
    return replace(value, deleted=True)


def _compatibility(state: RegistryState, subject: str | None) -> str:
    return state.configs.get(subject) or state.configs.get(GLOBAL) or DEFAULT_COMPATIBILITY


def _mode(state: RegistryState, subject: str | None) -> str:
    return state.modes.get(subject) or state.modes.get(GLOBAL) or DEFAULT_MODE


def _resolve(state: RegistryState, references: Sequence[Reference], depth: int = 0) -> dict[str, str]:
    """Reference name -> schema text for the references and theirs, transitively."""
    if depth > MAX_REFERENCE_DEPTH:
        raise errors.invalid_schema(f"references nested deeper than {MAX_REFERENCE_DEPTH}")
    resolved: dict[str, str] = {}
    for ref in references:
        try:
            value = _version(state, ref.subject, ref.version, deleted=False)
        except errors.RegistryError:
            raise errors.invalid_schema(
                f"reference {ref.name}: subject '{ref.subject}' version {ref.version} not found"
            ) from None
        resolved.update(_resolve(state, value.references, depth + 1))
        resolved[ref.name] = value.schema
    return resolved

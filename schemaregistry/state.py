"""What the `_schemas` topic says, applied record by record: subjects and their versions, the
schemas by id, and the compatibility levels and modes. The store's reader is the only writer;
the registry reads it under the store's lock."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from schemaregistry.records import (
    ConfigKey,
    DeleteSubjectKey,
    ModeKey,
    Record,
    Reference,
    SchemaKey,
    SchemaValue,
)


@dataclass(frozen=True)
class StoredSchema:
    """A schema as ids name it: the same text, type and references under any subject."""

    schema_type: str
    schema: str
    references: tuple[Reference, ...]


@dataclass
class RegistryState:
    versions: dict[str, dict[int, SchemaValue]] = field(default_factory=dict)
    schemas: dict[int, StoredSchema] = field(default_factory=dict)
    configs: dict[str | None, str] = field(default_factory=dict)
    modes: dict[str | None, str] = field(default_factory=dict)
    max_id: int = 0

    def apply(self, record: Record) -> None:
        key, value = record.key, record.value
        if isinstance(key, SchemaKey):
            self._apply_schema(key, value if isinstance(value, SchemaValue) else None)
        elif isinstance(key, ConfigKey):
            _put(self.configs, key.subject, value if isinstance(value, str) else None)
        elif isinstance(key, ModeKey):
            _put(self.modes, key.subject, value if isinstance(value, str) else None)
        elif isinstance(key, DeleteSubjectKey) and isinstance(value, int):
            versions = self.versions.get(key.subject, {})
            for number, version in versions.items():
                if number <= value:
                    versions[number] = replace(version, deleted=True)

    def _apply_schema(self, key: SchemaKey, value: SchemaValue | None) -> None:
        versions = self.versions.setdefault(key.subject, {})
        if value is None:
            versions.pop(key.version, None)
            if not versions:
                del self.versions[key.subject]
            return
        versions[key.version] = value
        self.schemas.setdefault(value.id, StoredSchema(value.schema_type, value.schema, value.references))
        self.max_id = max(self.max_id, value.id)

    # -- reading -----------------------------------------------------------------------------
    def subject_versions(self, subject: str, deleted: bool = False) -> list[SchemaValue]:
        """The subject's versions, oldest first; soft-deleted ones only when asked."""
        versions = self.versions.get(subject, {})
        return [versions[n] for n in sorted(versions) if deleted or not versions[n].deleted]

    def subjects(self, deleted: bool = False) -> list[str]:
        return sorted(s for s in self.versions if self.subject_versions(s, deleted))

    def usages(self, schema_id: int, deleted: bool = False) -> list[SchemaValue]:
        """Every subject version registered with this id."""
        return [
            version
            for subject in sorted(self.versions)
            for version in self.subject_versions(subject, deleted)
            if version.id == schema_id
        ]

    def referrers(self, subject: str, version: int) -> list[SchemaValue]:
        """Live versions whose schema refers to this subject version."""
        return [
            value
            for versions in self.versions.values()
            for value in versions.values()
            if not value.deleted
            and any(r.subject == subject and r.version == version for r in value.references)
        ]


def _put(table: dict[str | None, str], subject: str | None, value: str | None) -> None:
    if value is None:
        table.pop(subject, None)
    else:
        table[subject] = value

"""The `_schemas` topic's records byte for byte as Confluent's registry writes them (compaction
compares keys as bytes), and the state they build, tombstones and soft deletes included."""

from __future__ import annotations

import pytest

from schemaregistry.records import (
    ConfigKey,
    DeleteSubjectKey,
    ModeKey,
    Record,
    Reference,
    SchemaKey,
    SchemaValue,
    decode,
)
from schemaregistry.state import RegistryState

pytestmark = pytest.mark.unit


def test_keys_are_confluents_bytes():
    assert (
        SchemaKey("t-value", 3).encode() == b'{"keytype":"SCHEMA","subject":"t-value","version":3,"magic":1}'
    )
    assert ConfigKey(None).encode() == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert ModeKey("s").encode() == b'{"keytype":"MODE","subject":"s","magic":0}'
    assert DeleteSubjectKey("s").encode() == b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'


def test_schema_values_round_trip_and_omit_the_avro_type():
    avro = SchemaValue("t-value", 1, 7, '"string"')
    assert b"schemaType" not in Record(SchemaKey("t-value", 1), avro).encode()[1]
    proto = SchemaValue(
        "p-value", 2, 8, "syntax = 'proto3';", "PROTOBUF", (Reference("a.proto", "a", 1),), True
    )
    for value in (avro, proto):
        key, raw = Record(SchemaKey(value.subject, value.version), value).encode()
        assert decode(key, raw) == Record(SchemaKey(value.subject, value.version), value)


@pytest.mark.parametrize(
    "key, value",
    [
        (b'{"keytype":"NOOP","magic":0}', None),
        (b"not json", b"{}"),
        (b'{"keytype":"SCHEMA","subject":"s"}', b"{}"),  # no version
        (b'["a list"]', None),
        (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}', b'{"subject":"s"}'),
    ],
)
def test_records_this_registry_does_not_keep_are_skipped(key, value):
    assert decode(key, value) is None


def test_state_follows_soft_deletes_tombstones_and_configs():
    state = RegistryState()
    for version, schema_id in ((1, 1), (2, 2)):
        state.apply(Record(SchemaKey("s", version), SchemaValue("s", version, schema_id, f'"v{version}"')))
    state.apply(Record(ConfigKey(None), "FULL"))
    state.apply(Record(DeleteSubjectKey("s"), 1))
    assert [v.version for v in state.subject_versions("s")] == [2]
    assert [v.version for v in state.subject_versions("s", deleted=True)] == [1, 2]
    state.apply(Record(SchemaKey("s", 1), None))
    state.apply(Record(ConfigKey(None), None))
    assert [v.version for v in state.subject_versions("s", deleted=True)] == [2]
    assert state.configs == {} and state.max_id == 2

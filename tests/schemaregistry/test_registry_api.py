"""The registry's REST API against a real broker, as Confluent's clients call it: ids and
versions, the errors with Confluent's codes, compatibility, deletes, config and mode."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.schemaregistry.registry_harness import CONTENT_TYPE, call, cluster_with_registry, declare_body

pytestmark = pytest.mark.cluster


def avro_record(name: str, *fields: dict) -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})


USER_V1 = avro_record("User", {"name": "name", "type": "string"})
USER_V2 = avro_record(
    "User", {"name": "name", "type": "string"}, {"name": "age", "type": "int", "default": 0}
)
USER_NO_DEFAULT = avro_record("User", {"name": "name", "type": "string"}, {"name": "email", "type": "string"})


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    with cluster_with_registry(tmp_path_factory.mktemp("registry")) as (_, url):
        yield url


def register(url: str, subject: str, schema: str, **extra) -> tuple[int, dict]:
    return call(url, "POST", f"/subjects/{subject}/versions", {"schema": schema, **extra})


def test_a_schema_gets_an_id_and_versions_count_per_subject(registry):
    status, first = register(registry, "users-value", USER_V1)
    assert status == 200 and first["version"] == 1
    assert register(registry, "users-value", USER_V1)[1]["id"] == first["id"]  # already there: same id
    status, second = register(registry, "users-value", USER_V2)
    assert status == 200 and second["version"] == 2 and second["id"] != first["id"]
    assert call(registry, "GET", "/subjects/users-value/versions") == (200, [1, 2])
    latest = call(registry, "GET", "/subjects/users-value/versions/latest")[1]
    assert latest == {"subject": "users-value", "version": 2, "id": second["id"], "schema": USER_V2}
    assert call(registry, "GET", f"/schemas/ids/{first['id']}") == (200, {"schema": USER_V1})
    assert call(registry, "GET", f"/schemas/ids/{first['id']}/versions") == (
        200,
        [{"subject": "users-value", "version": 1}],
    )


def test_the_same_schema_under_another_subject_reuses_its_id(registry):
    _, first = register(registry, "a-value", avro_record("Shared", {"name": "x", "type": "long"}))
    spaced = json.dumps(json.loads(avro_record("Shared", {"name": "x", "type": "long"})), indent=4)
    _, second = register(registry, "b-value", spaced)
    assert second["id"] == first["id"] and second["version"] == 1
    assert call(registry, "GET", f"/schemas/ids/{first['id']}/subjects")[1] == ["a-value", "b-value"]


def test_lookup_finds_the_version_holding_a_schema(registry):
    _, registered = register(registry, "lookup-value", USER_V1)
    status, found = call(registry, "POST", "/subjects/lookup-value", {"schema": USER_V1})
    assert status == 200 and found["version"] == registered["version"] and found["id"] == registered["id"]
    assert call(registry, "POST", "/subjects/lookup-value", {"schema": USER_V2})[1]["error_code"] == 40403
    assert call(registry, "POST", "/subjects/nobody", {"schema": USER_V1})[1]["error_code"] == 40401


@pytest.mark.parametrize(
    "method, path, body, status, code",
    [
        ("GET", "/subjects/missing/versions", None, 404, 40401),
        ("GET", "/subjects/errors-value/versions/99", None, 404, 40402),
        ("GET", "/schemas/ids/999999", None, 404, 40403),
        ("GET", "/subjects/errors-value/versions/zero", None, 422, 42202),
        ("GET", "/subjects/errors-value/versions/0", None, 422, 42202),
        ("POST", "/subjects/bad-value/versions", {"schema": "{not avro"}, 422, 42201),
        ("POST", "/subjects/bad-value/versions", {"schema": '"string"', "schemaType": "XML"}, 422, 42201),
        ("POST", "/subjects/bad-value/versions", {"schemaType": "AVRO"}, 422, 422),
        ("PUT", "/config", {"compatibility": "SIDEWAYS"}, 422, 42203),
        ("PUT", "/mode", {"mode": "SOMETIMES"}, 422, 42204),
        ("GET", "/config/never-configured", None, 404, 40408),
        ("GET", "/no/such/route", None, 404, 404),
    ],
)
def test_wrong_requests_get_confluents_error_codes(registry, method, path, body, status, code):
    register(registry, "errors-value", USER_V1)
    answer = call(registry, method, path, body)
    assert answer[0] == status and answer[1]["error_code"] == code, answer
    assert answer[1]["message"]


def test_malformed_json_wrong_content_type_and_huge_bodies_are_refused(registry):
    assert call(registry, "POST", "/subjects/x/versions", raw=b"{oops")[1]["error_code"] == 400
    assert (
        call(registry, "POST", "/subjects/x/versions", {"schema": '"int"'}, content_type="text/plain")[0]
        == 415
    )
    assert declare_body(registry, "/subjects/x/versions", 9 << 20) == (
        413,
        {"error_code": 413, "message": "HTTP 413 Request Entity Too Large"},
    )
    assert call(registry, "GET", "/")[0] == 200  # and it goes on answering


def test_an_incompatible_schema_is_refused_with_the_field_named(registry):
    register(registry, "compat-value", USER_V1)
    status, body = register(registry, "compat-value", USER_NO_DEFAULT)
    assert status == 409 and body["error_code"] == 409
    assert "email" in body["message"] and "READER_FIELD_MISSING_DEFAULT_VALUE" in body["message"]
    check = call(
        registry,
        "POST",
        "/compatibility/subjects/compat-value/versions/latest?verbose=true",
        {"schema": USER_NO_DEFAULT},
    )
    assert check[1]["is_compatible"] is False and any("email" in m for m in check[1]["messages"])
    assert call(
        registry, "POST", "/compatibility/subjects/compat-value/versions/latest", {"schema": USER_V2}
    ) == (
        200,
        {"is_compatible": True},
    )
    assert call(registry, "PUT", "/config/compat-value", {"compatibility": "NONE"}) == (
        200,
        {"compatibility": "NONE"},
    )
    assert register(registry, "compat-value", USER_NO_DEFAULT)[0] == 200
    assert call(registry, "GET", "/config/compat-value")[1] == {"compatibilityLevel": "NONE"}


def test_soft_then_permanent_delete(registry):
    _, first = register(registry, "gone-value", USER_V1)
    register(registry, "gone-value", USER_V2)
    assert call(registry, "DELETE", "/subjects/gone-value?permanent=true")[1]["error_code"] == 40405
    assert call(registry, "DELETE", "/subjects/gone-value/versions/1") == (200, 1)
    assert call(registry, "GET", "/subjects/gone-value/versions") == (200, [2])
    assert call(registry, "GET", "/subjects/gone-value/versions?deleted=true") == (200, [1, 2])
    assert call(registry, "DELETE", "/subjects/gone-value") == (200, [2])
    assert "gone-value" not in call(registry, "GET", "/subjects")[1]
    assert "gone-value" in call(registry, "GET", "/subjects?deleted=true")[1]
    assert call(registry, "GET", f"/schemas/ids/{first['id']}")[0] == 200  # old records stay readable
    assert call(registry, "DELETE", "/subjects/gone-value")[1]["error_code"] == 40404
    assert call(registry, "DELETE", "/subjects/gone-value?permanent=true") == (200, [1, 2])
    assert call(registry, "GET", "/subjects/gone-value/versions?deleted=true")[1]["error_code"] == 40401
    # a new registration starts the subject over
    assert register(registry, "gone-value", USER_V1)[1]["version"] == 1


def test_a_version_deleted_for_good_and_configs_deleted_back_to_the_default(registry):
    _, first = register(registry, "purged-value", USER_V1)
    register(registry, "purged-value", USER_V2)
    assert call(registry, "GET", f"/schemas/ids/{first['id']}/schema") == (200, json.loads(USER_V1))
    purge = "/subjects/purged-value/versions/1?permanent=true"
    assert call(registry, "DELETE", purge)[1]["error_code"] == 40407  # not soft-deleted first
    assert call(registry, "DELETE", "/subjects/purged-value/versions/1") == (200, 1)
    assert call(registry, "DELETE", purge) == (200, 1)
    assert call(registry, "GET", "/subjects/purged-value/versions?deleted=true") == (200, [2])
    assert call(registry, "PUT", "/config/purged-value", {"compatibility": "FULL"})[0] == 200
    assert call(registry, "DELETE", "/config/purged-value") == (200, {"compatibilityLevel": "FULL"})
    assert call(registry, "GET", "/config/purged-value")[1]["error_code"] == 40408
    assert call(registry, "PUT", "/config", {"compatibility": "NONE"})[0] == 200
    assert call(registry, "DELETE", "/config") == (200, {"compatibilityLevel": "NONE"})
    assert call(registry, "GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})


def test_answers_are_of_the_registrys_content_type(registry):
    with urllib.request.urlopen(f"{registry}/subjects", timeout=30) as response:
        assert response.headers["Content-Type"] == CONTENT_TYPE


def test_read_only_mode_refuses_registrations(registry):
    assert call(registry, "PUT", "/mode/frozen-value", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    status, body = register(registry, "frozen-value", USER_V1)
    assert status == 422 and body["error_code"] == 42205
    assert call(registry, "DELETE", "/mode/frozen-value") == (200, {"mode": "READWRITE"})
    assert register(registry, "frozen-value", USER_V1)[0] == 200


def test_schema_types_and_global_config(registry):
    assert call(registry, "GET", "/schemas/types") == (200, ["JSON", "PROTOBUF", "AVRO"])
    assert call(registry, "GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})
    assert call(registry, "GET", "/mode") == (200, {"mode": "READWRITE"})


def test_references_resolve_and_protect_what_they_name(registry):
    address = avro_record("Address", {"name": "city", "type": "string"})
    _, referenced = register(registry, "address-value", address)
    person = avro_record("Person", {"name": "home", "type": "Address"})
    assert register(registry, "person-value", person)[1]["error_code"] == 42201  # Address unknown without it
    reference = {"name": "Address", "subject": "address-value", "version": 1}
    status, body = register(registry, "person-value", person, references=[reference])
    assert status == 200, body
    assert call(registry, "GET", "/subjects/address-value/versions/1/referencedby") == (200, [body["id"]])
    assert call(registry, "GET", f"/schemas/ids/{body['id']}")[1]["references"] == [reference]
    assert call(registry, "DELETE", "/subjects/address-value")[1]["error_code"] == 42206
    assert call(registry, "GET", f"/schemas/ids/{referenced['id']}")[0] == 200

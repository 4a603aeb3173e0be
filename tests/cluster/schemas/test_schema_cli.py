"""Records with schemas from the command line, on a cluster started by `kctl cluster up` (which
starts its schema registry): kctl schema, produce --value-schema and consume decoding."""

from __future__ import annotations

import json

import pytest

from tests.kctl.cli import run_kctl
from tests.kctl.local import kill_leftovers

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

USER_V1 = {
    "type": "record",
    "name": "User",
    "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}],
}
USER_V2 = {
    "type": "record",
    "name": "User",
    "fields": [*USER_V1["fields"], {"name": "email", "type": ["null", "string"], "default": None}],
}
USER_BAD = {
    "type": "record",
    "name": "User",
    "fields": [*USER_V1["fields"], {"name": "team", "type": "string"}],
}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    directory = tmp_path_factory.mktemp("schemas") / "cluster"
    env = {"KCTL_HOME": str(directory)}
    try:
        up = run_kctl("cluster", "up", "--brokers", "1", "--no-rest-proxy", env=env)
        assert up.returncode == 0, up.stderr
        yield directory, up.stdout.decode()
    finally:
        run_kctl("cluster", "down", env=env)
        kill_leftovers(directory)


def kctl(home, *args, expect=0, input=None):
    result = run_kctl(*args, input=input, env={"KCTL_HOME": str(home[0])})
    assert result.returncode == expect, (result.returncode, result.stderr)
    return result


def write(tmp_path, name, doc) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return str(path)


def test_cluster_up_prints_and_status_shows_the_registry(home):
    exports = [line for line in home[1].splitlines() if line.startswith("export ")]
    assert exports[0].startswith("export KCTL_SCHEMA_REGISTRY_URL=http://127.0.0.1:")
    assert exports[-1].startswith("export KCTL_BOOTSTRAP=")
    status = json.loads(kctl(home, "cluster", "status", "--json").stdout)
    assert status["schema_registry"]["url"] == exports[0].split("=", 1)[1]


def test_register_evolve_and_refuse_an_incompatible_schema(home, tmp_path):
    first = json.loads(
        kctl(
            home, "schema", "register", "persons-value", write(tmp_path, "v1.avsc", USER_V1), "--json"
        ).stdout
    )
    assert first["version"] == 1
    second = json.loads(
        kctl(
            home, "schema", "register", "persons-value", write(tmp_path, "v2.avsc", USER_V2), "--json"
        ).stdout
    )
    assert second["version"] == 2 and second["id"] != first["id"]
    assert (
        "compatible"
        in kctl(
            home, "schema", "check", "persons-value", str(tmp_path / "v2.avsc"), "--version", "all"
        ).stderr
    )
    bad = write(tmp_path, "bad.avsc", USER_BAD)
    refused = kctl(home, "schema", "check", "persons-value", bad, expect=6)
    assert "team" in refused.stderr
    assert "team" in kctl(home, "schema", "register", "persons-value", bad, expect=6).stderr
    assert json.loads(kctl(home, "schema", "get", "persons-value", "1").stdout) == USER_V1
    versions = json.loads(kctl(home, "schema", "versions", "persons-value", "--json").stdout)
    assert [v["version"] for v in versions] == [1, 2]
    assert kctl(home, "schema", "config", "persons-value", "--set", "none").stdout.decode().strip() == "NONE"
    kctl(home, "schema", "register", "persons-value", bad)
    assert "persons-value" in kctl(home, "schema", "list").stdout.decode()


def test_unknown_subjects_and_bad_schemas_exit_with_kctls_codes(home, tmp_path):
    assert "Subject 'nobody' not found." in kctl(home, "schema", "versions", "nobody", expect=4).stderr
    assert (
        "Invalid schema"
        in kctl(home, "schema", "register", "x-value", write(tmp_path, "bad.avsc", "{nope"), expect=5).stderr
    )
    unreachable = kctl(home, "schema", "list", "--schema-registry", "http://127.0.0.1:1", expect=3)
    assert "unreachable" in unreachable.stderr


def test_produce_with_an_avro_schema_and_consume_decoded(home, tmp_path):
    kctl(home, "topic", "create", "people", "-p", "1")
    schema = write(tmp_path, "user.avsc", USER_V1)
    lines = "".join(json.dumps({"name": f"n{i}", "age": i}) + "\n" for i in range(50))
    kctl(home, "produce", "people", "--value-schema", schema, input=lines)
    raw = kctl(home, "consume", "people", "-e", "--decode", "none", "-f", "%v\\n").stdout
    assert raw.startswith(b"\x00") and b'"name"' not in raw  # Avro on the wire, not JSON
    shown = kctl(home, "consume", "people", "-e").stdout.decode().splitlines()
    assert [json.loads(line) for line in shown] == [{"name": f"n{i}", "age": i} for i in range(50)]
    records = [
        json.loads(line) for line in kctl(home, "consume", "people", "-e", "--json").stdout.splitlines()
    ]
    assert records[3]["value_decoded"] == {"name": "n3", "age": 3}
    schema_id = records[3]["value_schema_id"]
    described = json.loads(kctl(home, "topic", "describe", "people", "--json").stdout)
    assert described["schemas"] == {
        "key": None,
        "value": {"subject": "people-value", "version": 1, "id": schema_id, "type": "AVRO"},
    }
    assert "people-value" in kctl(home, "topic", "describe", "people").stdout.decode()
    # the JSON envelope stays lossless: a copy holds the same bytes
    kctl(home, "topic", "create", "people-copy", "-p", "1")
    kctl(
        home,
        "produce",
        "people-copy",
        "-J",
        "json",
        input=b"\n".join(json.dumps(r).encode() for r in records) + b"\n",
    )
    assert kctl(home, "consume", "people-copy", "-e", "--decode", "none", "-f", "%v\\n").stdout == raw
    # by id and by subject too
    kctl(
        home, "produce", "people", "--value-schema-id", str(schema_id), input='{"name": "by-id", "age": 1}\n'
    )
    kctl(
        home,
        "produce",
        "people",
        "--value-subject",
        "people-value",
        input='{"name": "by-subject", "age": 2}\n',
    )
    assert kctl(home, "consume", "people", "-o", "-2", "-e").stdout.decode().splitlines()[-2:] == [
        '{"name":"by-id","age":1}',
        '{"name":"by-subject","age":2}',
    ]


def test_keys_with_a_schema_too(home, tmp_path):
    kctl(home, "topic", "create", "keyed", "-p", "1")
    key_schema = write(
        tmp_path, "key.avsc", {"type": "record", "name": "Key", "fields": [{"name": "id", "type": "int"}]}
    )
    value_schema = write(tmp_path, "value.avsc", USER_V1)
    line = json.dumps({"id": 7}) + "|" + json.dumps({"name": "k", "age": 1}) + "\n"
    kctl(
        home,
        "produce",
        "keyed",
        "-K",
        "|",
        "--key-schema",
        key_schema,
        "--value-schema",
        value_schema,
        input=line,
    )
    assert kctl(home, "consume", "keyed", "-e", "-f", "%k %s\\n").stdout == b'{"id":7} {"name":"k","age":1}\n'
    subjects = kctl(home, "schema", "list").stdout.decode()
    assert "keyed-key" in subjects and "keyed-value" in subjects


def test_a_line_that_does_not_fit_stops_with_its_line_and_field(home, tmp_path):
    kctl(home, "topic", "create", "strict", "-p", "1")
    schema = write(tmp_path, "user.avsc", USER_V1)
    ages: list[object] = [1, 2, "three", 4]
    lines = "".join(json.dumps({"name": name, "age": age}) + "\n" for name, age in zip("abcd", ages))
    failed = kctl(home, "produce", "strict", "--value-schema", schema, input=lines, expect=5)
    assert "line 3" in failed.stderr and "/age" in failed.stderr
    delivered = kctl(home, "consume", "strict", "-e").stdout.decode().splitlines()
    assert [json.loads(line)["name"] for line in delivered] == ["a", "b"]
    assert (
        "line 1"
        in kctl(home, "produce", "strict", "--value-schema", schema, input="not json\n", expect=5).stderr
    )


def test_a_record_with_an_unknown_schema_id_is_shown_as_bytes_with_a_warning(home):
    kctl(home, "topic", "create", "mystery", "-p", "1")
    kctl(home, "produce", "mystery", input=b"\x00\x00\x01\x86\xa0payload\n")  # schema id 100000
    result = kctl(home, "consume", "mystery", "-e")
    assert result.stdout == b"\x00\x00\x01\x86\xa0payload\n"
    assert "100000" in result.stderr


def test_subjects_and_ids_survive_cluster_down_and_up(home, tmp_path):
    schema = write(
        tmp_path, "kept.avsc", {"type": "record", "name": "Kept", "fields": [{"name": "k", "type": "long"}]}
    )
    registered = json.loads(kctl(home, "schema", "register", "kept-value", schema, "--json").stdout)
    url = json.loads(kctl(home, "cluster", "status", "--json").stdout)["schema_registry"]["url"]
    kctl(home, "cluster", "down")
    up = kctl(home, "cluster", "up", "--no-rest-proxy").stdout.decode()
    assert f"export KCTL_SCHEMA_REGISTRY_URL={url}" in up  # the same port again
    assert json.loads(kctl(home, "schema", "get", "--id", str(registered["id"])).stdout) == json.loads(
        open(schema).read()
    )
    assert (
        json.loads(kctl(home, "schema", "versions", "kept-value", "--json").stdout)[0]["id"]
        == registered["id"]
    )

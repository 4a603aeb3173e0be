"""`kctl watch TOPIC --sample` on a cluster started by `kctl cluster up` (with its schema
registry): the latest record of each partition, Avro values decoded with their schema id,
a value framed with an unknown schema id shown as bytes with the decoder's warning kept in the
sample (not on stderr, where it would tear the live screen), and the cap on partitions."""

from __future__ import annotations

import base64
import json

import pytest

from tests.cluster_harness import wait_until
from tests.kctl.cli import run_kctl
from tests.kctl.local import kill_leftovers

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

USER = {
    "type": "record",
    "name": "User",
    "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}],
}
UNKNOWN_ID = 999


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    directory = tmp_path_factory.mktemp("watch-sample") / "cluster"
    env = {"KCTL_HOME": str(directory)}
    try:
        up = run_kctl("cluster", "up", "--brokers", "1", "--no-rest-proxy", env=env)
        assert up.returncode == 0, up.stderr
        yield directory
    finally:
        run_kctl("cluster", "down", env=env)
        kill_leftovers(directory)


def kctl(home, *args, expect=0, input=None):
    result = run_kctl(*args, input=input, env={"KCTL_HOME": str(home)})
    assert result.returncode == expect, (result.returncode, result.stderr)
    return result


def sample_of(home, topic):
    """The sample of `kctl watch TOPIC --sample --once --json`, and the whole snapshot."""
    snap = json.loads(kctl(home, "watch", topic, "--sample", "--once", "--json").stdout)
    return snap["sample"], snap


def settled(home, topic, offsets):
    """The sample once every partition's row is at its expected offset: the dashboard's
    partition ends are those their leader last published (every 0.5 s)."""

    def check():
        sample, _ = sample_of(home, topic)
        return sample if [row["offset"] for row in sample["partitions"]] == offsets else None

    return wait_until(check, 30, f"the sample of {topic} at offsets {offsets}", interval=0.3)


@pytest.fixture(scope="module")
def users(home, tmp_path_factory):
    """Topic `users`: five Avro records in partition 0, partition 1 empty; the schema id."""
    schema = tmp_path_factory.mktemp("schemas") / "user.avsc"
    schema.write_text(json.dumps(USER))
    kctl(home, "topic", "create", "users", "-p", "2")
    lines = "".join(json.dumps({"name": f"n{i}", "age": i}) + "\n" for i in range(5))
    kctl(home, "produce", "users", "-p", "0", "--value-schema", str(schema), input=lines.encode())
    consumed = kctl(home, "consume", "users", "-e", "--json").stdout.splitlines()
    return json.loads(consumed[-1])["value_schema_id"]


def test_json_shows_the_latest_value_decoded_with_its_schema_id(home, users):
    sample = settled(home, "users", [4, None])
    latest, empty = sample["partitions"]
    assert latest["partition"] == 0 and latest["value_schema_id"] == users
    assert latest["value_decoded"] == {"name": "n4", "age": 4}
    assert empty == {"partition": 1, "offset": None, "note": "empty"}
    assert sample["warnings"] == [] and sample["partitions_left_out"] == 0


def test_plain_once_shows_it_too(home, users):
    settled(home, "users", [4, None])
    out = kctl(home, "watch", "users", "--sample", "--once").stdout.decode()
    section = out[out.index("SAMPLE users") :]
    assert f'(schema {users}) {{"name":"n4","age":4}}' in section
    assert "empty" in section


def test_without_sample_the_watch_is_unchanged(home, users):
    snap = json.loads(kctl(home, "watch", "users", "--once", "--json").stdout)
    assert "sample" not in snap
    assert "SAMPLE" not in kctl(home, "watch", "users", "--once").stdout.decode()
    refused = kctl(home, "watch", "--sample", "--once", expect=2)
    assert "--sample needs a TOPIC" in refused.stderr


def test_an_unknown_schema_id_shows_bytes_with_the_warning_in_the_sample(home):
    kctl(home, "topic", "create", "framed", "-p", "1")
    framed = b"\x00" + UNKNOWN_ID.to_bytes(4, "big") + b"\xffbody"
    line = json.dumps({"value": base64.b64encode(framed).decode(), "value_encoding": "base64"})
    kctl(home, "produce", "framed", "-J", "json", input=(line + "\n").encode())
    sample = settled(home, "framed", [0])
    row = sample["partitions"][0]
    assert "value_schema_id" not in row and base64.b64decode(row["value"]) == framed
    assert any(f"schema id {UNKNOWN_ID}" in w for w in sample["warnings"])
    plain = kctl(home, "watch", "framed", "--sample", "--once")
    assert "warning" not in plain.stderr
    shown = plain.stdout.decode()
    assert "\\x00\\x00\\x00\\x03\\xe7\\xffbody" in shown and f"schema id {UNKNOWN_ID}" in shown


def test_many_partitions_are_capped_and_the_sample_says_so(home):
    kctl(home, "topic", "create", "wide", "-p", "23")
    sample, _ = sample_of(home, "wide")
    assert len(sample["partitions"]) == 20 and sample["partitions_left_out"] == 3
    title = kctl(home, "watch", "wide", "--sample", "--once").stdout.decode()
    assert "3 more partition(s) not sampled" in title

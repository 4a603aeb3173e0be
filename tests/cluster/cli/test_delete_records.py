"""`kctl topic delete-records` on a real broker: the log start moves per partition (from flags
or a kafka-delete-records.sh offsets file), consumers no longer see what was deleted, and bad
requests fail with one line and a documented exit code."""

import json

import pytest

from kctl.shell.exit_codes import ExitCode
from tests.kctl.local import kctl_in, kctl_json

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def log_starts(directory, topic) -> dict[int, int]:
    return {
        p["partition"]: p["log_start_offset"]
        for p in kctl_json(directory, "topic", "describe", topic)["partitions"]
    }


def values(directory, topic, partition) -> list[str]:
    return (
        kctl_in(directory, "consume", topic, "-p", str(partition), "-o", "start", "-e")
        .stdout.decode()
        .split()
    )


def filled(directory, topic="t", partitions=2, records=10):
    kctl_in(directory, "topic", "create", topic, "-p", str(partitions))
    for p in range(partitions):
        kctl_in(directory, "produce", topic, "-p", str(p), input="".join(f"r{i}\n" for i in range(records)))


def test_delete_before_an_offset_per_partition_then_everything(cluster, tmp_path):
    filled(cluster.dir)
    assert kctl_json(cluster.dir, "topic", "delete-records", "t", "-p", "0", "--offset", "4") == [
        {"topic": "t", "partition": 0, "low_watermark": 4}
    ]
    assert log_starts(cluster.dir, "t") == {0: 4, 1: 0}
    assert values(cluster.dir, "t", 0) == [f"r{i}" for i in range(4, 10)]

    offsets = tmp_path / "offsets.json"
    offsets.write_text(
        json.dumps({"partitions": [{"topic": "t", "partition": 1, "offset": 7}], "version": 1})
    )
    text = kctl_in(cluster.dir, "topic", "delete-records", "--offset-json-file", str(offsets))
    assert text.stdout.decode().split() == ["TOPIC", "PARTITION", "LOW-WATERMARK", "t", "1", "7"]
    assert values(cluster.dir, "t", 1) == ["r7", "r8", "r9"]

    everything = kctl_json(cluster.dir, "topic", "delete-records", "t", "--offset", "end")
    assert [(r["partition"], r["low_watermark"]) for r in everything] == [(0, 10), (1, 10)]
    assert kctl_json(cluster.dir, "topic", "delete-records", "t", "--offset", "-1", "-p", "1") == [
        {"topic": "t", "partition": 1, "low_watermark": 10}
    ]
    assert values(cluster.dir, "t", 0) == [] and log_starts(cluster.dir, "t") == {0: 10, 1: 10}


def test_refusals_are_one_line_with_a_documented_code(cluster, tmp_path):
    filled(cluster.dir, partitions=1)
    bad_file = tmp_path / "bad.json"
    bad_file.write_text('{"partitions": [{"topic": "t"}]}')
    for args, code, message in [
        (
            ["t", "--offset", "11"],
            ExitCode.INVALID_INPUT,
            "OFFSET_OUT_OF_RANGE: offset 11 is beyond the high watermark 10 of t/0",
        ),
        (["nope", "--offset", "1"], ExitCode.NOT_FOUND, "unknown topic 'nope'"),
        (["t", "--offset", "1", "-p", "3"], ExitCode.NOT_FOUND, "topic 't' has no partition 3"),
        (["t", "--offset", "soon"], ExitCode.INVALID_INPUT, "invalid --offset 'soon'"),
        (["t", "--offset", "-2"], ExitCode.INVALID_INPUT, "invalid --offset '-2'"),
        (["t"], ExitCode.USAGE, "give a topic and --offset N"),
        (["t", "--offset-json-file", str(bad_file)], ExitCode.USAGE, "--offset-json-file replaces"),
        (["--offset-json-file", str(bad_file)], ExitCode.INVALID_INPUT, f"invalid offsets file {bad_file}"),
        (["--offset-json-file", str(tmp_path / "missing.json")], ExitCode.INVALID_INPUT, "cannot read"),
    ]:
        result = kctl_in(cluster.dir, "topic", "delete-records", *args, expect=code)
        assert result.stderr.startswith(f"kctl: error: {message}"), result.stderr
        assert result.stderr.count("\n") == 1 and result.stdout == b""
    assert log_starts(cluster.dir, "t") == {0: 0}  # nothing deleted

"""The source's planning and reading against a real broker, as plain Python (no Spark):
the reader methods Spark would call, called directly."""

import json
import time

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from kctl.spark.fetch import read_range
from kctl.spark.options import source_options
from kctl.spark.planning import DataLossError, OffsetRange
from kctl.spark.reader import KctlBatchReader, KctlStreamReader
from tests.kafka_helpers import create_topic
from tests.spark.helpers import TIMEOUT_S, produce

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def reader(cls, bootstrap, streaming, **options):
    return cls(source_options({"kafka.bootstrap.servers": bootstrap, **options}, streaming=streaming))


def read_all(r, tasks):
    return [row for task in tasks for batch in r.read(task) for row in batch.to_pylist()]


def test_batch_reader_reads_each_record_once_in_split_ranges(cluster):
    create_topic(cluster.bootstrap, "t", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "t", [f"a{i}" for i in range(30)], partition=0)
    produce(cluster.bootstrap, "t", [f"b{i}" for i in range(10)], partition=1)
    r = reader(KctlBatchReader, cluster.bootstrap, False, subscribe="t", minPartitions="4")
    tasks = r.partitions()
    assert len(tasks) >= 4
    assert sorted((t.value.partition, t.value.start, t.value.end) for t in tasks)[0][:2] == (0, 0)
    rows = read_all(r, tasks)
    assert sorted(row["value"] for row in rows) == sorted(
        [f"a{i}".encode() for i in range(30)] + [f"b{i}".encode() for i in range(10)]
    )
    assert {(row["partition"], row["offset"]) for row in rows} == (
        {(0, i) for i in range(30)} | {(1, i) for i in range(10)}
    )


def test_batch_reader_bounds_and_timestamps(cluster):
    create_topic(cluster.bootstrap, "t", 1, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "t", ["old"] * 5)
    middle = int(time.time() * 1000) + 1
    while int(time.time() * 1000) <= middle:  # the next records get a later CreateTime
        time.sleep(0.001)
    produce(cluster.bootstrap, "t", ["new"] * 3)
    r = reader(
        KctlBatchReader,
        cluster.bootstrap,
        False,
        assign='{"t": [0]}',
        startingOffsets='{"t": {"0": 2}}',
        endingOffsets='{"t": {"0": 6}}',
    )
    assert [row["offset"] for row in read_all(r, r.partitions())] == [2, 3, 4, 5]
    r = reader(KctlBatchReader, cluster.bootstrap, False, subscribe="t", startingTimestamp=str(middle))
    assert [row["value"] for row in read_all(r, r.partitions())] == [b"new"] * 3
    r = reader(
        KctlBatchReader, cluster.bootstrap, False, subscribe="t", startingTimestamp=str(middle + 10**9)
    )
    with pytest.raises(ValueError, match="no record in t/0 at or after"):
        r.partitions()


def test_specific_starting_offsets_must_cover_every_partition(cluster):
    create_topic(cluster.bootstrap, "t", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    r = reader(KctlBatchReader, cluster.bootstrap, False, subscribe="t", startingOffsets='{"t": {"0": 0}}')
    with pytest.raises(ValueError, match="missing t/1"):
        r.partitions()


def test_stream_reader_micro_batches_respect_the_read_limit(cluster):
    create_topic(cluster.bootstrap, "t", 2, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "t", [str(i) for i in range(8)], partition=0)
    produce(cluster.bootstrap, "t", [str(i) for i in range(4)], partition=1)
    r = reader(
        KctlStreamReader,
        cluster.bootstrap,
        True,
        subscribe="t",
        startingOffsets="earliest",
        maxOffsetsPerTrigger="5",
    )
    assert r.getDefaultReadLimit() == ReadMaxRows(5)
    start = r.initialOffset()
    assert start == {"t": {"0": 0, "1": 0}}
    sizes = []
    while (end := r.latestOffset(start, r.getDefaultReadLimit())) != start:
        json.dumps(end)  # what Spark stores in the checkpoint
        sizes.append(len(read_all(r, r.partitions(start, end))))
        start = end
    assert sizes == [5, 5, 2] and start == {"t": {"0": 8, "1": 4}}
    assert r.reportLatestOffset() == {"t": {"0": 8, "1": 4}}
    assert r.latestOffset(start, ReadAllAvailable()) == start


def test_available_now_ignores_later_records_and_new_topics_start_at_earliest(cluster):
    create_topic(cluster.bootstrap, "s1", 1, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "s1", ["x"] * 3)
    r = reader(KctlStreamReader, cluster.bootstrap, True, subscribePattern="s.*")
    start = r.initialOffset()
    assert start == {"s1": {"0": 3}}  # latest: the default for streams
    r.prepareForTriggerAvailableNow()
    produce(cluster.bootstrap, "s1", ["later"] * 2)
    assert r.latestOffset(start, ReadAllAvailable()) == start
    fresh = reader(KctlStreamReader, cluster.bootstrap, True, subscribePattern="s.*")
    create_topic(cluster.bootstrap, "s2", 1, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "s2", ["n1", "n2"])
    registered = fresh.latestOffset(start, ReadAllAvailable())
    assert registered == {"s1": {"0": 5}, "s2": {"0": 0}}
    assert [row["value"] for row in read_all(fresh, fresh.partitions(start, registered))] == [b"later"] * 2
    end = fresh.latestOffset(registered, ReadAllAvailable())
    assert [row["value"] for row in read_all(fresh, fresh.partitions(registered, end))] == [b"n1", b"n2"]


def test_readers_survive_pickling_for_executors(cluster):
    import pickle

    create_topic(cluster.bootstrap, "t", 1, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "t", ["v"])
    r = reader(KctlStreamReader, cluster.bootstrap, True, subscribe="t", startingOffsets="earliest")
    start = r.initialOffset()
    tasks = r.partitions(start, r.latestOffset(start, ReadAllAvailable()))
    copy = pickle.loads(pickle.dumps(r))
    assert [row["value"] for row in read_all(copy, [pickle.loads(pickle.dumps(t)) for t in tasks])] == [b"v"]


def test_missing_records_are_data_loss_or_skipped(cluster):
    create_topic(cluster.bootstrap, "t", 1, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "t", ["a", "b"])
    client = {"bootstrap.servers": cluster.bootstrap, "group.id": "g"}
    gone = OffsetRange("t", 0, 5, 10)  # past the end of the log: deleted by a truncation
    with pytest.raises(DataLossError, match="records 5..9 of t/0 are no longer in the log"):
        list(read_range(client, gone, fail_on_data_loss=True, timeout_s=10))
    assert list(read_range(client, gone, fail_on_data_loss=False, timeout_s=10)) == []


def test_a_range_not_yet_written_waits_then_times_out(cluster):
    create_topic(cluster.bootstrap, "t", 1, wait_for_leaders=True, timeout=TIMEOUT_S)
    produce(cluster.bootstrap, "t", ["a"])
    client = {"bootstrap.servers": cluster.bootstrap}
    started = time.monotonic()
    with pytest.raises(DataLossError, match="no record of t/0 at offset 1 arrived within 1s"):
        list(read_range(client, OffsetRange("t", 0, 0, 2), fail_on_data_loss=True, timeout_s=1))
    assert time.monotonic() - started < 5

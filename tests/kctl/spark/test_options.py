"""The kctl format's options: Spark's Kafka names, defaults and refusals."""

import pytest

from kctl.spark.offsets import TopicPartition as TP
from kctl.spark.options import sink_options, source_options, wants_headers

pytestmark = pytest.mark.unit

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def src(streaming=True, **options):
    return source_options({**BOOT, **options}, streaming=streaming)


def test_defaults_follow_spark():
    stream, batch = src(subscribe="a"), src(streaming=False, subscribe="a")
    assert stream.starting.kind == "latest" and batch.starting.kind == "earliest"
    assert batch.ending.kind == "latest"
    assert stream.fail_on_data_loss and not stream.include_headers
    assert stream.max_offsets_per_trigger is None and stream.min_partitions is None
    assert stream.client["isolation.level"] == "read_uncommitted"  # Java's default, not librdkafka's
    assert stream.client["group.id"].startswith("spark-kafka-source-")
    assert stream.poll_timeout_s == 120.0


def test_option_names_are_case_insensitive_and_kafka_settings_pass_through():
    o = source_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "Subscribe": "a, b",
            "MAXOFFSETSPERTRIGGER": "5",
            "kafka.isolation.level": "read_committed",
            "kafka.fetch.max.bytes": "1000",
            "groupIdPrefix": "mine",
        },
        streaming=True,
    )
    assert o.subscription.topics == ("a", "b")
    assert o.max_offsets_per_trigger == 5
    assert o.read_committed
    assert o.client["fetch.max.bytes"] == "1000" and o.client["bootstrap.servers"] == "h:1"
    assert o.client["group.id"].startswith("mine-")


def test_exactly_one_strategy():
    with pytest.raises(ValueError, match="exactly one of"):
        src()
    with pytest.raises(ValueError, match="got subscribe, subscribepattern"):
        src(subscribe="a", subscribePattern="a.*")
    pattern = src(subscribePattern="orders-.*").subscription
    assert pattern.wants("orders-eu") and not pattern.wants("orders") and not pattern.wants("__orders-x")
    assigned = src(assign='{"a": [1]}').subscription
    assert assigned.assigned == (TP("a", 1),) and assigned.wants("a") and not assigned.wants("b")


def test_starting_positions_and_precedence():
    assert src(subscribe="a", startingOffsets='{"a": {"0": 5, "1": -2}}').starting.offsets == {
        TP("a", 0): 5,
        TP("a", 1): -2,
    }
    by_time = src(subscribe="a", startingOffsetsByTimestamp='{"a": {"0": 1000}}', startingOffsets="earliest")
    assert by_time.starting.kind == "timestamps"
    one_time = src(subscribe="a", startingTimestamp="1000", startingOffsetsByTimestamp='{"a": {"0": 5}}')
    assert (one_time.starting.kind, one_time.starting.timestamp) == ("timestamp", 1000)
    assert src(subscribe="a", startingOffsetsByTimestampStrategy="latest").no_match_latest


@pytest.mark.parametrize(
    "options, message",
    [
        ({"endingOffsets": "latest"}, "not valid in streaming"),
        ({"startingOffsets": '{"a": {"0": -3}}'}, "invalid startingOffsets for a/0: -3"),
        ({"maxOffsetsPerTrigger": "0"}, "invalid maxOffsetsPerTrigger 0: must be positive"),
        ({"minPartitions": "x"}, "invalid minPartitions 'x'"),
        ({"failOnDataLoss": "yes"}, "invalid failOnDataLoss"),
        ({"kafka.auto.offset.reset": "earliest"}, "set startingOffsets instead"),
        ({"kafka.enable.auto.commit": "true"}, "never committed"),
        ({"kafka.isolation.level": "dirty"}, "invalid kafka.isolation.level"),
        ({"subscribePattern": "("}, "invalid subscribePattern"),
    ],
)
def test_refusals(options, message):
    with pytest.raises(ValueError, match=message):
        src(**{"subscribe": "a", **options} if "subscribePattern" not in options else options)


def test_batch_only_refusals():
    with pytest.raises(ValueError, match="cannot be latest for batch"):
        src(streaming=False, subscribe="a", startingOffsets="latest")
    with pytest.raises(ValueError, match="-2 earliest\\)"):
        src(streaming=False, subscribe="a", startingOffsets='{"a": {"0": -1}}')
    with pytest.raises(ValueError, match="endingOffsets cannot be earliest"):
        src(streaming=False, subscribe="a", endingOffsets="earliest")
    with pytest.raises(ValueError, match="-1 latest\\)"):
        src(streaming=False, subscribe="a", endingOffsets='{"a": {"0": -2}}')


def test_bootstrap_is_required():
    with pytest.raises(ValueError, match="kafka.bootstrap.servers is required"):
        source_options({"subscribe": "a"}, streaming=True)


def test_sink_options():
    assert sink_options({**BOOT, "topic": "out"}, exactly_once=True).topic == "out"
    assert sink_options({**BOOT, "kafka.acks": "1"}, exactly_once=False).client["acks"] == "1"
    with pytest.raises(ValueError, match="needs kafka.acks=all"):
        sink_options({**BOOT, "kafka.acks": "1"}, exactly_once=True)
    with pytest.raises(ValueError, match="enable.idempotence=true"):
        sink_options({**BOOT, "kafka.enable.idempotence": "false"}, exactly_once=True)
    with pytest.raises(ValueError, match="value.serializer is not supported"):
        sink_options({**BOOT, "kafka.value.serializer": "x"}, exactly_once=False)


def test_headers_flag_alone_decides_the_schema():
    assert wants_headers({"includeHeaders": "TRUE"}) and not wants_headers({})

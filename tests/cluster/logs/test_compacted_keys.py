"""A compacted topic refuses keyless records with INVALID_RECORD, as Kafka does, and Produce
v8 names the refused records."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer
from kafka.protocol.api_key import ApiKey
from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.kafka_helpers import create_topic
from tests.raw_request import raw_request

pytestmark = pytest.mark.cluster

MESSAGE = "Compacted topic cannot accept message without key in topic partition keyed-0."
COMPACTED = {"cleanup.policy": "compact"}


def test_librdkafka_gets_invalid_record_for_a_keyless_record_only(cluster):
    create_topic(cluster.bootstrap, "keyed", configs=COMPACTED)
    reports = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    producer.produce("keyed", b"no key", partition=0, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(10)
    producer.produce("keyed", b"keyed", b"k", partition=0, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(10)
    assert [None if err is None else err.code() for err in reports] == [KafkaError.INVALID_RECORD, None]


def test_produce_v8_names_the_keyless_records(cluster):
    create_topic(cluster.bootstrap, "keyed", configs=COMPACTED)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i, key in enumerate([b"a", None, b"c", None]):
        builder.append(i, timestamp=1_000, key=key, value=b"v", headers=[])
    response = raw_request(
        next(iter(cluster.ports.values())),
        ApiKey.Produce,
        8,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 5000,
            "topic_data": [
                {"name": "keyed", "partition_data": [{"index": 0, "records": bytes(builder.build())}]}
            ],
        },
    )
    result = response.responses[0].partition_responses[0]
    assert result.error_code == KafkaError.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in result.record_errors] == [
        (1, MESSAGE),
        (3, MESSAGE),
    ]

"""max.broker.partitions (KIP-578): a CreateTopics or CreatePartitions that would put more
replicas on a broker than its limit is refused at once with POLICY_VIOLATION naming the limit;
below it, the topic is created and the broker answers as before."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.cluster_harness import running_cluster

pytestmark = pytest.mark.cluster

POLICY_VIOLATION = 44
LIMIT = 60


@pytest.fixture(scope="module")
def admin(tmp_path_factory):
    with running_cluster(
        tmp_path_factory.mktemp("limit"), 1, {"max.broker.partitions": str(LIMIT)}
    ) as cluster:
        yield AdminClient({"bootstrap.servers": cluster.bootstrap})


def refusal(future) -> KafkaException:
    with pytest.raises(KafkaException) as raised:
        future.result(10)
    return raised.value


def test_a_huge_create_topics_is_refused_at_once_naming_the_limit(admin):
    started = time.monotonic()
    error = refusal(admin.create_topics([NewTopic("typo", 32769, 1)])["typo"]).args[0]
    assert time.monotonic() - started < 2
    assert error.code() == POLICY_VIOLATION
    assert "max.broker.partitions" in error.str() and str(LIMIT) in error.str()
    assert "typo" not in admin.list_topics(timeout=10).topics


def test_topics_fit_until_the_broker_is_full(admin):
    admin.create_topics([NewTopic("fits", 40, 1)])["fits"].result(10)
    error = refusal(admin.create_topics([NewTopic("one-too-many", LIMIT - 40 + 1, 1)])["one-too-many"]).args[
        0
    ]
    assert error.code() == POLICY_VIOLATION
    grow = admin.create_partitions([NewPartitions("fits", LIMIT + 1)])["fits"]
    assert refusal(grow).args[0].code() == POLICY_VIOLATION
    admin.create_partitions([NewPartitions("fits", 50)])["fits"].result(10)
    assert len(admin.list_topics("fits", timeout=10).topics["fits"].partitions) == 50

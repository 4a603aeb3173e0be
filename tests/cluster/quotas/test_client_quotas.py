"""Client quotas on a real broker: DescribeClientQuotas and AlterClientQuotas on the wire,
Kafka's INVALID_REQUEST answers, a producer throttled to its producer_byte_rate while
another client id is not, a fetch over consumer_byte_rate answered with throttle_time_ms and
its connection left unread that long; then the same through `kctl quota`."""

from __future__ import annotations

import struct
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.api_key import ApiKey

from brokerd.protocol.codec import decode_response
from tests.cluster_harness import running_cluster
from tests.kctl.local import kctl_in, kctl_json
from tests.raw_request import RawConnection, raw_request

pytestmark = [pytest.mark.cluster, pytest.mark.interop]

INVALID_REQUEST = 42
RATE = 50 * 1024


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with running_cluster(tmp_path_factory.mktemp("client-quotas")) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("quota", 1, 1)], operation_timeout=10)["quota"].result(10)
        yield cluster


def port(cluster) -> int:
    return next(iter(cluster.ports.values()))


def alter(cluster, entity: dict, ops: list[tuple[str, float, bool]], validate_only=False, version=1):
    response = raw_request(
        port(cluster),
        ApiKey.AlterClientQuotas,
        version,
        {
            "validate_only": validate_only,
            "entries": [
                {
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                    "ops": [{"key": k, "value": v, "remove": r} for k, v, r in ops],
                }
            ],
        },
    )
    return response.entries[0]


def describe(cluster, components: list[tuple[str, int, str | None]], strict=False, version=1):
    response = raw_request(
        port(cluster),
        ApiKey.DescribeClientQuotas,
        version,
        {
            "strict": strict,
            "components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
        },
    )
    assert response.error_code == 0, response.error_message
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
        for entry in response.entries
    }


def test_alter_then_describe_with_kafkas_match_types(cluster):
    assert (
        alter(
            cluster, {"user": "alice", "client-id": None}, [("consumer_byte_rate", 2048.0, False)]
        ).error_code
        == 0
    )
    assert alter(cluster, {"user": None}, [("request_percentage", 12.5, False)], version=0).error_code == 0
    exact = describe(cluster, [("user", 0, "alice")])
    assert exact == {(("client-id", None), ("user", "alice")): {"consumer_byte_rate": 2048.0}}
    assert describe(cluster, [("user", 0, "alice")], strict=True) == {}
    assert describe(cluster, [("user", 1, None)], strict=True, version=0) == {
        (("user", None),): {"request_percentage": 12.5}
    }
    assert len(describe(cluster, [("user", 2, None)])) == 2
    assert alter(cluster, {"user": None}, [("request_percentage", 0, True)]).error_code == 0
    assert describe(cluster, [("user", 1, None)], strict=True) == {}


@pytest.mark.parametrize(
    "entity, ops, message",
    [
        ({"group": "g"}, [("producer_byte_rate", 1.0, False)], "Unhandled client quota entity type: group"),
        ({"user": "u"}, [("bytes_per_second", 1.0, False)], "Invalid configuration key bytes_per_second"),
        (
            {"client-id": "c"},
            [("producer_byte_rate", -5.0, False)],
            "Configuration producer_byte_rate must be non-negative, not -5",
        ),
    ],
)
def test_invalid_entities_and_values_are_invalid_request(cluster, entity, ops, message):
    result = alter(cluster, entity, ops)
    assert (result.error_code, result.error_message) == (INVALID_REQUEST, message)


def test_validate_only_stores_nothing(cluster):
    assert (
        alter(
            cluster, {"client-id": "dry"}, [("producer_byte_rate", 1.0, False)], validate_only=True
        ).error_code
        == 0
    )
    assert describe(cluster, [("client-id", 0, "dry")]) == {}


def produce_megabyte(cluster, client_id: str) -> tuple[float, list]:
    throttles = []
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "client.id": client_id,
            "linger.ms": 0,
            "batch.size": 32 * 1024,
            "acks": 1,
            "throttle_cb": throttles.append,
        }
    )
    started = time.monotonic()
    for _ in range(100):
        producer.produce("quota", b"x" * 10 * 1024)
        producer.poll(0)
    assert producer.flush(60) == 0
    producer.poll(0)
    return time.monotonic() - started, throttles


def test_producer_over_its_byte_rate_is_throttled_and_others_are_not(cluster):
    assert alter(cluster, {"client-id": "slow"}, [("producer_byte_rate", RATE, False)]).error_code == 0
    time.sleep(0.3)  # the broker takes quota changes up within 100 ms
    elapsed, throttles = produce_megabyte(cluster, "fast")
    assert elapsed < 5 and not throttles
    elapsed, throttles = produce_megabyte(cluster, "slow")
    # 1 MiB at 50 KiB/s: the first 10 s worth pass at once (a young window counts as 10 s),
    # the rest waits until the burst leaves the 11 s window
    assert elapsed >= 8, elapsed
    assert throttles and max(t.throttle_time for t in throttles) > 0


def fetch(connection: RawConnection, max_bytes: int):
    """One Fetch, its response read whole (a socket with a timeout may hand a large frame
    over in pieces)."""
    header = connection.send(
        ApiKey.Fetch,
        11,
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 1,
            "max_bytes": max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "rack_id": "",
            "topics": [
                {
                    "topic": "quota",
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 0,
                            "log_start_offset": -1,
                            "partition_max_bytes": max_bytes,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
        },
    )
    size = struct.unpack(">i", read_exactly(connection.sock, 4))[0]
    return decode_response(header, read_exactly(connection.sock, size))


def read_exactly(sock, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, "the broker closed the connection"
        data += chunk
    return bytes(data)


def test_fetch_over_consumer_byte_rate_is_throttled_and_the_connection_waits(cluster):
    # the fetch takes whole batches of up to 31 KB (3 records of the producer test's 10 KiB),
    # so it brings 169-200 KB: over a 10 s window at 15,000 B/s that is 1.3-3.3 s of throttle
    assert alter(cluster, {"client-id": "raw"}, [("consumer_byte_rate", 15000, False)]).error_code == 0
    time.sleep(0.3)
    with RawConnection(port(cluster), timeout=20) as connection:
        first = fetch(connection, 200_000)
        size = len(first.responses[0].partitions[0].records)
        expected = (size / 10 - 15000) / 15000 * 10_000
        assert first.throttle_time_ms == pytest.approx(expected, abs=50)
        assert first.throttle_time_ms > 1000
        started = time.monotonic()
        fetch(connection, 1)
        assert time.monotonic() - started >= first.throttle_time_ms / 1000 - 0.1


def test_kctl_quota_alter_and_describe(cluster):
    kctl_in(
        cluster.dir,
        "quota",
        "alter",
        "--bootstrap",
        cluster.bootstrap,
        "--user",
        "bob",
        "--client-id-default",
        "--add",
        "producer_byte_rate=1048576,consumer_byte_rate=2048",
    )
    kctl_in(
        cluster.dir,
        "quota",
        "alter",
        "--bootstrap",
        cluster.bootstrap,
        "--user",
        "bob",
        "--client-id-default",
        "--delete",
        "consumer_byte_rate",
    )
    rows = kctl_json(cluster.dir, "quota", "describe", "--bootstrap", cluster.bootstrap, "--user", "bob")
    assert rows == [{"user": "bob", "client_id": "<default>", "values": {"producer_byte_rate": 1048576}}]
    table = kctl_in(
        cluster.dir, "quota", "describe", "--bootstrap", cluster.bootstrap, "--user", "bob"
    ).stdout.decode()
    assert "<default>" in table and "producer_byte_rate=1048576" in table
    failed = kctl_in(
        cluster.dir,
        "quota",
        "alter",
        "--bootstrap",
        cluster.bootstrap,
        "--client-id",
        "c",
        "--add",
        "producer_byte_rate=-1",
        expect=5,
    )
    assert "Configuration producer_byte_rate must be non-negative" in failed.stderr
    kctl_in(
        cluster.dir,
        "quota",
        "alter",
        "--bootstrap",
        cluster.bootstrap,
        "--user",
        "a",
        "--user-default",
        "--add",
        "producer_byte_rate=1",
        expect=2,
    )

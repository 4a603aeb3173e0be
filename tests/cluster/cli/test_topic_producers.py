"""`kctl topic producers` on real brokerd: what an idempotent and a transactional confluent-kafka
producer leave in a partition's producer state (id, epoch, last sequence, the coordinator epoch
of the last marker, an open transaction's first offset), and a new instance under the same
transactional.id fencing the old one by a higher epoch."""

import pytest
from confluent_kafka import Producer

from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import free_port, wait_until
from tests.kafka_helpers import transactional_producer
from tests.kctl.local import kctl_in, kctl_json

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def write_idempotently(bootstrap: str, topic: str, count: int) -> None:
    """`count` records to partition 0 from one idempotent producer, one batch (one sequence) each."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, f"i{i}".encode(), partition=0)
        assert producer.flush(10) == 0


def by_id(rows: list[dict]) -> dict[int, dict]:
    return {r["producer_id"]: r for r in rows}


def test_idempotent_and_transactional_producers_with_epochs_sequences_and_the_open_transaction(
    cluster, isolated_env
):
    kctl_in(cluster.dir, "topic", "create", "orders", "-p", "2")
    write_idempotently(cluster.bootstrap, "orders", 3)  # offsets 0-2
    [plain_row] = kctl_json(cluster.dir, "topic", "producers", "orders")
    assert plain_row["partition"] == 0 and plain_row["producer_epoch"] == 0
    assert plain_row["last_sequence"] == 2  # sequences 0, 1, 2
    assert plain_row["latest_coordinator_epoch"] is None  # never in a transaction
    assert plain_row["current_transaction_start_offset"] is None
    assert plain_row["last_timestamp"].endswith("Z")

    first = transactional_producer(cluster.bootstrap, "loader")
    first.begin_transaction()
    first.produce("orders", b"committed", partition=0)  # offset 3, marker at 4
    first.commit_transaction(20)
    committed = by_id(kctl_json(cluster.dir, "topic", "producers", "orders", "-p", "0"))
    [txn_id] = set(committed) - {plain_row["producer_id"]}
    assert committed[txn_id]["latest_coordinator_epoch"] is not None
    assert committed[txn_id]["current_transaction_start_offset"] is None

    second = transactional_producer(cluster.bootstrap, "loader")  # fences `first`
    second.begin_transaction()
    for value in (b"open-0", b"open-1"):
        second.produce("orders", value, partition=0)  # offsets 5, 6: left open
    assert second.flush(10) == 0
    rows = by_id(kctl_json(cluster.dir, "topic", "producers", "orders"))
    assert rows[plain_row["producer_id"]] == plain_row
    assert rows[txn_id]["producer_epoch"] == committed[txn_id]["producer_epoch"] + 1
    assert rows[txn_id]["last_sequence"] == 1  # a new epoch counts from 0
    assert rows[txn_id]["current_transaction_start_offset"] == 5

    table = kctl_in(cluster.dir, "topic", "producers", "orders").stdout.decode().splitlines()
    assert table[0].split() == [
        "PARTITION",
        "PRODUCER-ID",
        "PRODUCER-EPOCH",
        "LATEST-COORDINATOR-EPOCH",
        "LAST-SEQUENCE",
        "LAST-TIMESTAMP",
        "CURRENT-TRANSACTION-START-OFFSET",
    ]
    start_offsets = {int(line.split()[1]): line.split()[-1] for line in table[1:]}
    assert start_offsets == {plain_row["producer_id"]: "-", txn_id: "5"}
    assert kctl_json(cluster.dir, "topic", "producers", "orders", "-p", "1") == []


def test_unknown_topic_or_partition_and_an_unreachable_cluster_are_one_line(cluster, isolated_env):
    kctl_in(cluster.dir, "topic", "create", "orders", "-p", "2")
    unknown = kctl_in(cluster.dir, "topic", "producers", "nope", expect=ExitCode.NOT_FOUND)
    assert unknown.stderr == "kctl: error: unknown topic 'nope'\n"
    partition = kctl_in(cluster.dir, "topic", "producers", "orders", "-p", "2", expect=ExitCode.NOT_FOUND)
    assert partition.stderr == "kctl: error: topic 'orders' has no partition 2 (it has 0..1)\n"
    gone = kctl_in(
        cluster.dir,
        "topic",
        "producers",
        "orders",
        "-b",
        f"127.0.0.1:{free_port()}",
        "--timeout",
        "1",
        expect=ExitCode.UNREACHABLE,
    )
    assert gone.stderr.count("\n") == 1 and "cannot reach the cluster" in gone.stderr


def test_a_partition_without_a_leader_is_left_out_and_fails_the_command(cluster_factory, isolated_env):
    two = cluster_factory(2, {"broker.session.timeout.ms": "1500"})
    kctl_in(two.dir, "topic", "create", "orders", "-p", "2", "-r", "1")
    leaders = {
        p["partition"]: p["leader"] for p in kctl_json(two.dir, "topic", "describe", "orders")["partitions"]
    }
    assert leaders[0] != leaders[1]
    two.kill(leaders[1])
    wait_until(
        lambda: kctl_json(two.dir, "topic", "describe", "orders")["partitions"][1]["leader"] < 0,
        20,
        "partition 1 to go offline",
    )
    offline = kctl_in(two.dir, "topic", "producers", "orders", "--json", expect=ExitCode.UNREACHABLE)
    assert offline.stdout == b"[]\n"
    assert offline.stderr == (
        "kctl: error: topic 'orders' partition(s) 1 have no leader (offline): their producers are unknown\n"
    )
    assert kctl_json(two.dir, "topic", "producers", "orders", "-p", "0") == []

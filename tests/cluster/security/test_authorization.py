"""Every API checks what Apache Kafka checks: a secured three-broker cluster (SASL logins,
the StandardAuthorizer's rules) used by clients we did not write, and raw requests where only
the broker's own answer tells (follower fetches, transaction markers, InitProducerId).

Each user below has only the ACLs its test gives it; the ACLs of the module's tests add up, so
every test works on its own user, topics and groups. ACL changes reach every broker within a
tick: tests poll for the outcome the change must bring.
"""

from __future__ import annotations

import pytest
from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.protocol.api_key import ApiKey

from brokerd.state import ClusterState
from tests.cluster_harness import running_cluster, wait_until
from tests.kafka_helpers import create_topic
from tests.raw_request import RawConnection
from tests.security_harness import add_scram_user, sasl_settings, secure_cluster_dir

USERS = (
    "alice",
    "bob",
    "carol",
    "dave",
    "erin",
    "frank",
    "gina",
    "hank",
    "ivan",
    "kate",
    "liam",
    "mia",
    "nora",
)
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
ACL_TIMEOUT_S = 10
pytestmark = [pytest.mark.cluster, pytest.mark.interop]


def password(user: str) -> str:
    return f"{user}-secret"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("authorization")
    admin_password, overrides = secure_cluster_dir(directory)
    state = ClusterState(directory)
    for user in USERS:
        add_scram_user(state, user, password(user))
    overrides.update({"default.replication.factor": "3", "replica.lag.time.max.ms": "2000"})
    with running_cluster(directory, 3, overrides, "SASL_PLAINTEXT") as running:
        running.admin_password = admin_password
        running.admin = admin(running)
        yield running


def settings(cluster, user: str) -> dict:
    secret = cluster.admin_password if user == "admin" else password(user)
    return {"bootstrap.servers": cluster.bootstrap, "log_level": 0, **sasl_settings(user, secret)}


def admin(cluster, user: str = "admin") -> AdminClient:
    """Keep the client while its futures are pending: a dropped client fails them."""
    return AdminClient(settings(cluster, user))


def allow(
    user: str,
    operation: AclOperation,
    resource_type: ResourceType,
    name: str,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
    permission: AclPermissionType = AclPermissionType.ALLOW,
) -> AclBinding:
    principal = user if user.startswith("User:") else f"User:{user}"
    return AclBinding(resource_type, name, pattern, principal, "*", operation, permission)


def deny(user: str, operation: AclOperation, resource_type: ResourceType, name: str) -> AclBinding:
    return allow(user, operation, resource_type, name, permission=AclPermissionType.DENY)


def grant(cluster, *bindings: AclBinding) -> None:
    for future in cluster.admin.create_acls(list(bindings)).values():
        future.result(10)


def produce_code(cluster, user: str, topic: str, **config) -> int:
    """The error code of one message's delivery (0 when delivered)."""
    producer = Producer({**settings(cluster, user), "message.timeout.ms": 5000, **config})
    outcome: list[KafkaError | None] = []
    producer.produce(topic, b"value", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(10)
    assert outcome, "no delivery report"
    return 0 if outcome[0] is None else outcome[0].code()


def listed_topics(cluster, user: str) -> set[str]:
    return set(admin(cluster, user).list_topics(timeout=10).topics)


def error_code_of(future) -> int:
    try:
        future.result(10)
    except KafkaException as exc:
        return exc.args[0].code()
    return 0


def plain_login(conn: RawConnection, user: str) -> None:
    assert conn.request(ApiKey.SaslHandshake, 1, {"mechanism": "PLAIN"}).error_code == 0
    response = conn.request(
        ApiKey.SaslAuthenticate, 1, {"auth_bytes": f"\0{user}\0{password(user)}".encode()}
    )
    assert response.error_code == 0


def test_replicas_fetch_as_the_super_user_and_stay_in_sync(cluster):
    """Followers fetch with CLUSTER_ACTION (brokers log in as the super user): an acks=all
    write to three replicas completes, and every replica stays in sync."""
    create_topic(cluster.admin, "replicated", 3, 3)
    producer = Producer({**settings(cluster, "admin"), "acks": "all", "message.timeout.ms": 10000})
    for i in range(60):
        producer.produce("replicated", str(i).encode(), partition=i % 3)
    assert producer.flush(15) == 0

    def isr_full():
        topic = cluster.admin.list_topics("replicated", timeout=10).topics["replicated"]
        return all(sorted(p.isrs) == [1, 2, 3] for p in topic.partitions.values())

    wait_until(isr_full, 10, "every replica in sync")


def test_produce_needs_write_on_the_topic(cluster):
    create_topic(cluster.admin, "alice-t", 1, 3)
    grant(cluster, allow("alice", AclOperation.READ, ResourceType.TOPIC, "alice-t"))
    # READ implies DESCRIBE: the producer sees the topic, the broker refuses the write
    wait_until(lambda: "alice-t" in listed_topics(cluster, "alice"), ACL_TIMEOUT_S, "the topic to be visible")
    assert produce_code(cluster, "alice", "alice-t") == TOPIC_AUTHORIZATION_FAILED
    grant(cluster, allow("alice", AclOperation.WRITE, ResourceType.TOPIC, "alice-t"))
    wait_until(
        lambda: produce_code(cluster, "alice", "alice-t") == 0, ACL_TIMEOUT_S, "the write to be allowed"
    )


def test_write_alone_implies_describe_and_metadata_hides_other_topics(cluster):
    create_topic(cluster.admin, "bob-w", 1, 3)
    create_topic(cluster.admin, "bob-hidden", 1, 3)
    grant(cluster, allow("bob", AclOperation.WRITE, ResourceType.TOPIC, "bob-w"))
    visible = wait_until(
        lambda: "bob-w" in (t := listed_topics(cluster, "bob")) and t,
        ACL_TIMEOUT_S,
        "the written topic to be visible",
    )
    assert "bob-hidden" not in visible and "replicated" not in visible
    assert "bob-hidden" in listed_topics(cluster, "admin")
    # Asked by name, a topic without DESCRIBE is refused whether it exists or not
    for name in ("bob-hidden", "bob-missing"):
        described = admin(cluster, "bob").list_topics(name, timeout=10).topics[name]
        assert described.error.code() == TOPIC_AUTHORIZATION_FAILED


def test_consumers_need_read_on_the_topic_and_the_group(cluster):
    create_topic(cluster.admin, "carol-t", 1, 3)
    producer = Producer(settings(cluster, "admin"))
    producer.produce("carol-t", b"hello")
    assert producer.flush(10) == 0
    grant(
        cluster,
        allow("carol", AclOperation.READ, ResourceType.TOPIC, "carol-t"),
        allow("carol", AclOperation.READ, ResourceType.GROUP, "carol-g"),
    )

    def consume(group: str):
        consumer = Consumer(
            {**settings(cluster, "carol"), "group.id": group, "auto.offset.reset": "earliest"}
        )
        consumer.subscribe(["carol-t"])
        try:
            for _ in range(20):
                message = consumer.poll(0.5)
                if message is not None:
                    return message
        finally:
            consumer.close()
        return None

    def consumed():  # until the ACLs reach the group's coordinator
        message = consume("carol-g")
        return message is not None and message.error() is None and message

    assert wait_until(consumed, ACL_TIMEOUT_S * 2, "a consumed record").value() == b"hello"
    refused = consume("carol-other")
    assert refused is not None and refused.error().code() == GROUP_AUTHORIZATION_FAILED

    carol = admin(cluster, "carol")
    groups = carol.list_consumer_groups(request_timeout=10).result(10)
    assert [g.group_id for g in groups.valid] == ["carol-g"]
    described = carol.describe_consumer_groups(["carol-other"])["carol-other"]
    assert error_code_of(described) == GROUP_AUTHORIZATION_FAILED


def test_a_prefixed_allow_covers_the_topics_it_starts(cluster):
    create_topic(cluster.admin, "dave-orders", 1, 3)
    create_topic(cluster.admin, "orders-dave", 1, 3)
    grant(
        cluster, allow("dave", AclOperation.WRITE, ResourceType.TOPIC, "dave-", ResourcePatternType.PREFIXED)
    )
    wait_until(
        lambda: produce_code(cluster, "dave", "dave-orders") == 0,
        ACL_TIMEOUT_S,
        "the prefixed allow to apply",
    )
    assert produce_code(cluster, "dave", "orders-dave") == TOPIC_AUTHORIZATION_FAILED


def test_a_deny_beats_an_allow(cluster):
    create_topic(cluster.admin, "erin-t", 1, 3)
    grant(cluster, allow("erin", AclOperation.WRITE, ResourceType.TOPIC, "erin-t"))
    wait_until(lambda: produce_code(cluster, "erin", "erin-t") == 0, ACL_TIMEOUT_S, "the allow to apply")
    grant(cluster, deny("erin", AclOperation.WRITE, ResourceType.TOPIC, "erin-t"))
    wait_until(
        lambda: produce_code(cluster, "erin", "erin-t") == TOPIC_AUTHORIZATION_FAILED,
        ACL_TIMEOUT_S,
        "the deny to apply",
    )


def test_an_acl_for_every_user(cluster):
    create_topic(cluster.admin, "public-news", 1, 3)
    grant(cluster, allow("User:*", AclOperation.DESCRIBE, ResourceType.TOPIC, "public-news"))
    visible = wait_until(
        lambda: "public-news" in (t := listed_topics(cluster, "frank")) and t,
        ACL_TIMEOUT_S,
        "the topic to be visible to everyone",
    )
    assert visible.isdisjoint({"replicated", "alice-t", "bob-w"})


def test_creating_and_deleting_topics(cluster):
    gina = admin(cluster, "gina")
    created = gina.create_topics([NewTopic("gina-new", 1, 1)])["gina-new"]
    assert error_code_of(created) == TOPIC_AUTHORIZATION_FAILED
    grant(
        cluster, allow("gina", AclOperation.CREATE, ResourceType.TOPIC, "gina-", ResourcePatternType.PREFIXED)
    )
    wait_until(
        lambda: error_code_of(gina.create_topics([NewTopic("gina-new", 1, 1)])["gina-new"]) == 0,
        ACL_TIMEOUT_S,
        "the creation to be allowed",
    )
    assert error_code_of(gina.delete_topics(["gina-new"])["gina-new"]) == TOPIC_AUTHORIZATION_FAILED
    grant(cluster, allow("gina", AclOperation.DELETE, ResourceType.TOPIC, "gina-new"))
    wait_until(
        lambda: error_code_of(gina.delete_topics(["gina-new"])["gina-new"]) == 0,
        ACL_TIMEOUT_S,
        "the deletion to be allowed",
    )
    assert "gina-new" not in listed_topics(cluster, "admin")


def test_an_idempotent_producer_needs_idempotent_write_or_write_on_a_topic(cluster):
    create_topic(cluster.admin, "hank-t", 1, 3)
    grant(cluster, allow("hank", AclOperation.WRITE, ResourceType.TOPIC, "hank-t"))
    wait_until(
        lambda: produce_code(cluster, "hank", "hank-t", **{"enable.idempotence": True}) == 0,
        ACL_TIMEOUT_S,
        "the idempotent write",
    )

    def init_producer_id(user: str) -> int:
        with RawConnection(cluster.ports[1]) as conn:
            plain_login(conn, user)
            return conn.request(
                ApiKey.InitProducerId, 1, {"transactional_id": None, "transaction_timeout_ms": 60000}
            ).error_code

    assert init_producer_id("hank") == 0  # WRITE on some topic is enough
    assert init_producer_id("ivan") == CLUSTER_AUTHORIZATION_FAILED
    grant(cluster, allow("ivan", AclOperation.IDEMPOTENT_WRITE, ResourceType.BROKER, "kafka-cluster"))
    wait_until(
        lambda: init_producer_id("ivan") == 0, ACL_TIMEOUT_S, "IDEMPOTENT_WRITE on the cluster to apply"
    )


def test_a_transactional_producer_needs_write_on_its_transactional_id(cluster):
    """The commit also has the coordinator write its markers to the topic's leader, another
    broker perhaps, as the super user."""
    create_topic(cluster.admin, "kate-t", 1, 3)
    grant(cluster, allow("kate", AclOperation.WRITE, ResourceType.TOPIC, "kate-t"))

    def run_transaction(transactional_id: str) -> int:
        producer = Producer(
            {
                **settings(cluster, "kate"),
                "transactional.id": transactional_id,
                "transaction.timeout.ms": 10000,
            }
        )
        try:
            producer.init_transactions(10)
            producer.begin_transaction()
            producer.produce("kate-t", b"in a transaction")
            producer.commit_transaction(10)
        except KafkaException as exc:
            return exc.args[0].code()
        return 0

    assert run_transaction("kate-txn") == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(cluster, allow("kate", AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "kate-txn"))
    wait_until(lambda: run_transaction("kate-txn") == 0, ACL_TIMEOUT_S * 2, "the transaction to be allowed")
    with RawConnection(cluster.ports[1]) as conn:
        plain_login(conn, "kate")
        response = conn.request(
            ApiKey.InitProducerId, 1, {"transactional_id": "kate-other", "transaction_timeout_ms": 10000}
        )
        assert response.error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_describing_and_altering_configs(cluster):
    create_topic(cluster.admin, "liam-t", 1, 3)
    grant(cluster, allow("liam", AclOperation.READ, ResourceType.TOPIC, "liam-t"))
    liam = admin(cluster, "liam")

    def describe_code(resource: ConfigResource) -> int:
        return error_code_of(liam.describe_configs([resource], request_timeout=10)[resource])

    topic = ConfigResource(ConfigResource.Type.TOPIC, "liam-t")
    broker = ConfigResource(ConfigResource.Type.BROKER, "1")
    assert describe_code(topic) == TOPIC_AUTHORIZATION_FAILED
    assert describe_code(broker) == CLUSTER_AUTHORIZATION_FAILED
    grant(cluster, allow("liam", AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, "liam-t"))
    wait_until(lambda: describe_code(topic) == 0, ACL_TIMEOUT_S, "ALTER_CONFIGS to imply DESCRIBE_CONFIGS")


def test_authorized_operations_are_the_users_own(cluster):
    create_topic(cluster.admin, "mia-t", 1, 3)
    grant(
        cluster,
        allow("mia", AclOperation.READ, ResourceType.TOPIC, "mia-t"),
        allow("mia", AclOperation.WRITE, ResourceType.TOPIC, "mia-t"),
    )
    mia = admin(cluster, "mia")

    def operations():
        try:
            return set(
                mia.describe_topics(TopicCollection(["mia-t"]), include_authorized_operations=True)["mia-t"]
                .result(10)
                .authorized_operations
            )
        except KafkaException:
            return None

    assert wait_until(operations, ACL_TIMEOUT_S, "the topic's operations") == {
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DESCRIBE,
    }
    cluster_ops = mia.describe_cluster(include_authorized_operations=True).result(10)
    assert not cluster_ops.authorized_operations  # mia may not DESCRIBE the cluster
    everything = cluster.admin.describe_cluster(include_authorized_operations=True).result(10)
    assert AclOperation.CLUSTER_ACTION in set(everything.authorized_operations)


def test_broker_and_admin_requests_need_cluster_permissions(cluster):
    """A client may not fetch as a follower, write transaction markers, list log dirs or
    elect leaders without the cluster permission Kafka asks for; nor fetch, list offsets or
    find a coordinator without its permission on the topic, group or transactional id."""
    create_topic(cluster.admin, "nora-t", 1, 3)
    grant(cluster, allow("nora", AclOperation.READ, ResourceType.TOPIC, "nora-t"))
    leader = cluster.admin.list_topics("nora-t", timeout=10).topics["nora-t"].partitions[0].leader
    with RawConnection(cluster.ports[leader]) as conn:
        plain_login(conn, "nora")

        def fetch(replica_id: int, topic: str = "nora-t") -> int:
            response = conn.request(
                ApiKey.Fetch,
                4,
                {
                    "replica_id": replica_id,
                    "max_wait_ms": 0,
                    "min_bytes": 0,
                    "max_bytes": 1 << 20,
                    "isolation_level": 0,
                    "topics": [
                        {
                            "topic": topic,
                            "partitions": [
                                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                            ],
                        }
                    ],
                },
            )
            return response.responses[0].partitions[0].error_code

        wait_until(lambda: fetch(-1) == 0, ACL_TIMEOUT_S, "the consumer fetch to be allowed")
        assert fetch(-1, "replicated") == TOPIC_AUTHORIZATION_FAILED  # no READ there
        assert fetch(2) == TOPIC_AUTHORIZATION_FAILED  # a follower's fetch needs CLUSTER_ACTION

        for key_type, code in ((0, GROUP_AUTHORIZATION_FAILED), (1, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)):
            found = conn.request(ApiKey.FindCoordinator, 1, {"key": "nora", "key_type": key_type})
            assert found.error_code == code and found.node_id == -1

        markers = conn.request(
            ApiKey.WriteTxnMarkers,
            0,
            {
                "markers": [
                    {
                        "producer_id": 1,
                        "producer_epoch": 0,
                        "transaction_result": False,
                        "coordinator_epoch": 0,
                        "topics": [{"name": "nora-t", "partition_indexes": [0]}],
                    }
                ]
            },
        )
        assert markers.markers[0].topics[0].partitions[0].error_code == CLUSTER_AUTHORIZATION_FAILED

        # DescribeCluster answers anyone, but tells the cluster's operations (none here, not
        # Kafka's "not asked" value) only to a client that may DESCRIBE the cluster
        described = conn.request(ApiKey.DescribeCluster, 0, {"include_cluster_authorized_operations": True})
        assert described.error_code == 0 and described.authorized_operations == set()

        log_dirs = conn.request(ApiKey.DescribeLogDirs, 3, {"topics": None})
        assert log_dirs.error_code == CLUSTER_AUTHORIZATION_FAILED and not log_dirs.results

        offsets = conn.request(
            ApiKey.ListOffsets,
            1,
            {
                "replica_id": -1,
                "topics": [{"name": "replicated", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
            },
        )
        assert offsets.topics[0].partitions[0].error_code == TOPIC_AUTHORIZATION_FAILED
    nora = admin(cluster, "nora")
    election = nora.elect_leaders(ElectionType.PREFERRED, [TopicPartition("nora-t", 0)])
    assert error_code_of(election) == CLUSTER_AUTHORIZATION_FAILED

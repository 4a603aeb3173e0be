"""ACLs: on a cluster with an authorizer, an authenticated user may do only what an ACL allows;
WRITE on a topic lets a user produce to it and nothing more."""

from __future__ import annotations

from confluent_kafka import KafkaError, Message, TopicPartition
from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType

from brokerd.security.acl import AclBinding
from kctl.kafka import acls, scram
from kctl.kafka.client import Connection
from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPIC = "payroll"
USER, PASSWORD = "alice", "alice-secret"
TOPIC_DENIED = KafkaError.TOPIC_AUTHORIZATION_FAILED
ONE_TRY = {"retries": 0, "message.timeout.ms": 10000}


def _setup(lab: Lab) -> str:
    lab.create_topic(TOPIC, 1, 1)
    scram.upsert(lab.conn, USER, PASSWORD, "SCRAM-SHA-512", 4096)
    lab.seen["alice"] = lab.as_user(USER, PASSWORD)
    return f"topic {TOPIC} created by admin; user {USER} created (SCRAM-SHA-512)"


def _produce_as_alice(conn: Connection, value: str) -> KafkaError | None:
    producer = conn.producer(ONE_TRY)
    errors: list[KafkaError | None] = []
    producer.produce(TOPIC, value.encode(), on_delivery=lambda e, _m: errors.append(e))
    producer.flush(15)
    return errors[0] if errors else KafkaError(KafkaError._MSG_TIMED_OUT)


def _first_try(lab: Lab) -> str:
    error = _produce_as_alice(lab.seen["alice"], "salary 1")
    lab.seen["denied"] = error
    said = "delivered" if error is None else f"{error.name()} ({error.str()})"
    return f"{USER} authenticated and produced one record: {said}"


def _denied(lab: Lab) -> Observed:
    error = lab.seen["denied"]
    held = error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    end = lab.partition(TOPIC)["high_watermark"]
    return Observed(held, f"{'no error' if error is None else error.name()}; {TOPIC} still ends at {end}")


def _grant_write(lab: Lab) -> str:
    binding = AclBinding(
        ResourceType.TOPIC,
        TOPIC,
        ACLResourcePatternType.LITERAL,
        f"User:{USER}",
        "*",
        ACLOperation.WRITE,
        ACLPermissionType.ALLOW,
    )
    acls.create(lab.conn, [binding])
    lab.seen["granted"] = lab.wait(
        lambda: _produce_as_alice(lab.seen["alice"], "salary 2") is None or None,
        f"{USER}'s write to be allowed",
    )
    consumer = lab.seen["alice"].consumer({"group.id": "alice-reads"})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])

        def fetched() -> Message | None:
            # a refusal of the group alice's consumer belongs to may come first: not the point
            message = consumer.poll(0.5)
            if message is None or (message.error() and message.error().code() != TOPIC_DENIED):
                return None
            return message

        lab.seen["read_error"] = lab.wait(fetched, f"an answer to {USER}'s fetch").error()
    finally:
        consumer.close()
    error = lab.seen["read_error"]
    said = "got a record" if error is None else f"{error.name()}"
    return f"ACL created: User:{USER} ALLOW WRITE on TOPIC {TOPIC}; {USER} produced; {USER} read: {said}"


def _write_only(lab: Lab) -> Observed:
    error = lab.seen["read_error"]
    end = lab.partition(TOPIC)["high_watermark"]
    held = (
        lab.seen["granted"] is True
        and error is not None
        and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        and end == 1
    )
    return Observed(
        held,
        f"produce delivered ({TOPIC} ends at {end}); fetch: {'no error' if error is None else error.name()}",
    )


LESSON = Lesson(
    name="acls",
    title="Authentication and ACLs",
    summary="a user with no ACL is refused (TOPIC_AUTHORIZATION_FAILED); WRITE lets her produce, not read",
    seeds=("003",),
    brokers=1,
    broker_config={},
    security_protocol="SASL_PLAINTEXT",
    steps=(
        Narrate(
            "This lesson's cluster has SASL_PLAINTEXT listeners and an authorizer, as `kctl cluster up "
            "--security-protocol SASL_PLAINTEXT` makes it: every client authenticates (SCRAM), and the "
            "super user `admin` creates users and **ACLs**, rules saying which principal may do which "
            "operation on which resource."
        ),
        Experiment("create the topic and the user alice", _setup),
        Ask(
            "alice authenticates with the right password, but no ACL names her. She produces to payroll. "
            "What happens?",
            (
                "It works: she is an authenticated user.",
                "It is refused with TOPIC_AUTHORIZATION_FAILED: what no ACL allows is denied.",
                "It works, but her records are hidden from other users.",
            ),
            "b",
            seed="003",
        ),
        Experiment("produce as alice", _first_try),
        Show("the broker's security events", TOPIC),
        Check("alice's write was refused with TOPIC_AUTHORIZATION_FAILED and nothing appended", _denied),
        Ask(
            "The admin grants alice WRITE on payroll. Can she now produce, and read?",
            (
                "Both: having any ACL on the topic opens it to her.",
                "She can produce; reading is the READ operation, which she still lacks.",
                "Neither until she reconnects.",
            ),
            "b",
        ),
        Experiment("grant alice WRITE, produce and read as alice", _grant_write),
        Show("the denial of her read, with the rule that decided", TOPIC, brokers=False),
        Check("with WRITE alone alice produced, and her read was refused", _write_only),
        Explain(
            "It also manages the access control lists (ACLs) to different topics in the cluster. ACLs "
            "are used to enforce access or authorization.",
            "003",
            "An ACL allows one principal one operation (READ, WRITE, CREATE, DESCRIBE, ...) on one "
            "resource (a topic, a group, the cluster); with allow.everyone.if.no.acl.found=false, as "
            "here, the authorizer denies everything no ACL allows. `kctl acl explain` says which rule "
            "decided a request.",
        ),
    ),
)

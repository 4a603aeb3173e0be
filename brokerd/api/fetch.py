"""Fetch: whole batches from the one holding the fetch offset, long-polled up to MaxWaitMs.

Fetch sessions (KIP-227, v7+, ``brokerd/fetch_session.py``) decide which partitions are read
and which are answered: an incremental fetch reads every partition of its session, so a long
poll waits on all of them, but answers only those that changed; a follower's session skips
the partitions it parked as idle until they change. Records are never null
(librdkafka treats a null record set as a parse failure). read_committed consumers
(isolation level 1) read up to the last stable offset and get the aborted transactions of
the range returned; read_uncommitted ones get a null list, as from Kafka.

Consumers need READ on each topic they fetch, followers (replica_id >= 0) CLUSTER_ACTION on
the cluster; a partition refused either way answers TOPIC_AUTHORIZATION_FAILED, as in Kafka.
"""

from __future__ import annotations

import asyncio

from kafka.admin import ACLOperation

from brokerd.api.authorization import Permission, allows_cluster, decided
from brokerd.api.errors import error_code
from brokerd.api.request import Request
from brokerd.fetch_session import CachedPartition, FetchContext, FetchManager, FetchSession
from brokerd.partition import Partition
from brokerd.ports.services import BrokerServices
from brokerd.replica_manager import ReplicaManager
from brokerd.storage.record_batch import last_offset_in
from brokerd.waiters import wait_any

READ_COMMITTED = 1


async def handle(services: BrokerServices, request: Request, fetch_manager: FetchManager) -> dict:
    body = request.body
    context = fetch_manager.new_context(body)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(body.max_wait_ms, 0) / 1000
    readable = (
        decided(allows_cluster(services.security.authorizer, request.session, ACLOperation.CLUSTER_ACTION))
        if body.replica_id >= 0
        else Permission(services.security.authorizer, request.session, ACLOperation.READ)
    )
    first_pass = True
    while True:
        responses, total_bytes, watched = _read_all(services.replicas, body, context, readable, first_pass)
        first_pass = False
        remaining = deadline - loop.time()
        if context.session is not None and context.session.privileged:
            watched.append(context.session.waiters)  # a parked partition that changes wakes the poll
        if total_bytes >= body.min_bytes or remaining <= 0 or not watched:
            break
        if not await wait_any(watched, remaining):
            break  # nothing changed while waiting: what was read is still the answer
        context.reread()
    result = context.respond(responses)
    return {
        "throttle_time_ms": 0,
        "error_code": result.error_code,
        "session_id": result.session_id,
        "responses": _by_topic(result.responses),
    }


def _by_topic(responses: list[tuple[str, dict]]) -> list[dict]:
    """Consecutive partitions of one topic share a topic entry, as in Kafka's FetchResponse;
    a session's rotation may name a topic again further on."""
    topics: list[dict] = []
    for topic, response in responses:
        if not topics or topics[-1]["topic"] != topic:
            topics.append({"topic": topic, "partitions": []})
        topics[-1]["partitions"].append(response)
    return topics


def _read_all(
    replicas: ReplicaManager, body, context: FetchContext, readable: Permission, first_pass: bool
) -> tuple[list[dict], int, list]:
    """One pass over the partitions to read (the request's, or its session's unparked ones),
    with what to wait on if nothing is there yet. A follower's fetch offsets are recorded on
    the first pass only, as Kafka records a fetch once: a long poll re-read after a change
    must not tell of a follower as it was then.

    The whole response stays within the request's max_bytes and each partition within its
    partition_max_bytes; only the response's very first batch may exceed them (Kafka's
    minOneMessage), so a consumer is never stuck behind a big batch and never gets more
    than it can take (librdkafka drops the connection on an oversized response).
    """
    total = 0
    watched = []
    responses = []
    for topic, p in context.fetch_data:
        if isinstance(p, CachedPartition) and _park_idle_follower_partition(
            replicas, body, context.session, topic, p, readable
        ):
            responses.append(p.unchanged_response())
            continue
        limit = max(min(p.partition_max_bytes, body.max_bytes - total), 0)
        result, partition = _read_partition(replicas, body, topic, p, limit, total == 0, readable, first_pass)
        if partition is not None and isinstance(p, CachedPartition):
            p.seen_changes = partition.changes
        size = len(result["records"])
        total += size
        if partition is not None and size == 0:
            watched.append(partition.waiters)
        responses.append(result)
    return responses, total, watched


def _park_idle_follower_partition(
    replicas: ReplicaManager,
    body,
    session: FetchSession | None,
    topic: str,
    wanted: CachedPartition,
    readable: Permission,
) -> bool:
    """Park the partition in the follower's session when it is exactly as the last full read
    left it (no change since, the follower at the log end and in sync): there is nothing to
    read or answer until it changes (see FetchSession). False when it must be read."""
    if session is None or not session.privileged or not readable.allows(topic):
        return False
    partition = replicas.partitions.get((topic, wanted.partition))
    if (
        partition is None
        or wanted.seen_changes != partition.changes
        or not partition.is_leader
        or not partition.follower_still_caught_up(body.replica_id, wanted.fetch_offset)
    ):
        return False
    session.park(wanted.key)
    partition.park_idle_follower(body.replica_id, session)
    return True


def _read_partition(
    replicas: ReplicaManager,
    body,
    topic: str,
    wanted,
    max_bytes: int,
    min_one_message: bool,
    readable: Permission,
    record_fetch: bool,
) -> tuple[dict, Partition | None]:
    """Consumers read up to the high watermark (read_committed ones up to the last stable
    offset); a follower (replica_id >= 0) reads up to the log end, and its fetch offset tells
    the leader how far its log reaches."""
    index = wanted.partition
    follower = body.replica_id >= 0
    read_committed = body.isolation_level == READ_COMMITTED and not follower
    try:
        readable.require(topic)
        partition = replicas.get_leader(topic, index)
        partition.check_leader_epoch(wanted.current_leader_epoch)
        if follower and record_fetch:
            partition.record_follower_fetch(body.replica_id, wanted.fetch_offset, wanted.log_start_offset)
        records = (
            partition.read(
                wanted.fetch_offset,
                max_bytes,
                for_follower=follower,
                read_committed=read_committed,
                min_one_message=min_one_message,
            )
            if max_bytes > 0
            else b""
        )
        aborted = _aborted_transactions(partition, wanted.fetch_offset, records) if read_committed else None
    except Exception as exc:
        return {
            "partition_index": index,
            "error_code": error_code(exc),
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": b"",
        }, None
    return {
        "partition_index": index,
        "error_code": 0,
        "high_watermark": partition.high_watermark,
        "last_stable_offset": partition.last_stable_offset,
        "log_start_offset": partition.log.log_start_offset,
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": bytes(records),
    }, partition


def _aborted_transactions(partition: Partition, fetch_offset: int, records: bytes | memoryview) -> list[dict]:
    """The aborted transactions overlapping the offsets actually returned."""
    last_offset = last_offset_in(records)
    if last_offset is None:
        return []
    return [
        {"producer_id": producer_id, "first_offset": first_offset}
        for producer_id, first_offset in partition.log.aborted_transactions(fetch_offset, last_offset + 1)
    ]

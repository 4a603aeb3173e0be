"""DescribeLogDirs: where this broker keeps each replica, and how big each one is.

It needs DESCRIBE on the cluster; as in Kafka a refused request gets an empty answer, with
CLUSTER_AUTHORIZATION_FAILED from v3, whose response first carries an error code."""

from __future__ import annotations

import shutil

from kafka.admin import ACLOperation

from brokerd.api.authorization import cluster_refusal
from brokerd.api.errors import error_code
from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices


async def handle(services: BrokerServices, request: Request) -> dict:
    refused = cluster_refusal(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
    if refused is not None:
        return {"throttle_time_ms": 0, "error_code": error_code(refused), "results": []}
    wanted = (
        None
        if request.body.topics is None
        else {(t.topic, p) for t in request.body.topics for p in t.partitions}
    )
    by_topic: dict[str, list[dict]] = {}
    for (topic, index), partition in sorted(services.replicas.partitions.items()):
        if wanted is None or (topic, index) in wanted:
            by_topic.setdefault(topic, []).append(
                {
                    "partition_index": index,
                    "partition_size": partition.log.size_in_bytes,
                    "offset_lag": max(partition.high_watermark - partition.log.log_end_offset, 0),
                    "is_future_key": False,
                }
            )
    data_dir = services.replicas.data_dir
    usage = shutil.disk_usage(data_dir)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "results": [
            {
                "error_code": 0,
                "log_dir": str(data_dir.resolve()),
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                "total_bytes": usage.total,
                "usable_bytes": usage.free,
            }
        ],
    }

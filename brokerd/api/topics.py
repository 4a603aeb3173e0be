"""CreateTopics and DeleteTopics, which clients send to the controller."""

from __future__ import annotations

from kafka.errors import InvalidRequestError

from brokerd.api.errors import error_code, error_message

DEFAULT = -1


async def handle_create(broker, request) -> dict:
    body = request.body
    results = [_create(broker, topic, body.validate_only) for topic in body.topics]
    broker.refresh_metadata()
    return {"throttle_time_ms": 0, "topics": results}


def _create(broker, topic, validate_only: bool) -> dict:
    live = broker.refresh_registrations()
    try:
        configs = {c.name: c.value for c in topic.configs}
        if topic.assignments:
            raise InvalidRequestError("manual replica assignment is not supported")
        partitions = topic.num_partitions
        if partitions == DEFAULT:
            partitions = broker.config.get("num.partitions")
        replication = topic.replication_factor
        if replication == DEFAULT:
            replication = min(broker.config.get("default.replication.factor"), len(live))
        broker.controller.create_topic(topic.name, partitions, replication, configs, live,
                                       validate_only=validate_only)
    except Exception as exc:
        return {"name": topic.name, "error_code": error_code(exc),
                "error_message": error_message(exc)}
    return {"name": topic.name, "error_code": 0, "error_message": None}


async def handle_delete(broker, request) -> dict:
    results = []
    for name in request.body.topic_names:
        try:
            broker.controller.delete_topic(name)
            results.append({"name": name, "error_code": 0})
        except Exception as exc:
            results.append({"name": name, "error_code": error_code(exc)})
    broker.refresh_metadata()
    return {"throttle_time_ms": 0, "responses": results}

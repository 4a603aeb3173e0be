"""FindCoordinator: this broker coordinates groups; transactions are not offered."""

from kafka.errors import CoordinatorNotAvailableError

KEY_TYPE_GROUP = 0


async def handle(broker, request) -> dict:
    body = request.body
    if body.key_type != KEY_TYPE_GROUP:
        return {"error_code": CoordinatorNotAvailableError.errno,
                "error_message": "brokerd has no transaction coordinator",
                "node_id": -1, "host": "", "port": -1}
    return {"error_code": 0, "error_message": None, "node_id": broker.broker_id,
            "host": broker.config.host, "port": broker.config.port}

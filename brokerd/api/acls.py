"""CreateAcls, DescribeAcls and DeleteAcls, answered as Kafka answers them without an
authorizer (no `authorizer.class.name`): SECURITY_DISABLED.

brokerd's listeners are plaintext and unauthenticated, so every client is User:ANONYMOUS and
there is nothing an ACL could grant or deny. Answering these APIs, rather than leaving them
unadvertised, gives kafka-acls.sh and admin clients Kafka's own error instead of "not
supported by broker".
"""

from __future__ import annotations

from kafka.errors import SecurityDisabledError

NO_AUTHORIZER = "No Authorizer is configured on the broker"  # Kafka's own words


async def handle_create(broker, request) -> dict:
    return {"throttle_time_ms": 0, "results": [_refused() for _ in request.body.creations]}


async def handle_describe(broker, request) -> dict:
    return {"throttle_time_ms": 0, **_refused(), "resources": []}


async def handle_delete(broker, request) -> dict:
    return {"throttle_time_ms": 0, "filter_results": [
        {**_refused(), "matching_acls": []} for _ in request.body.filters]}


def _refused() -> dict:
    return {"error_code": SecurityDisabledError.errno, "error_message": NO_AUTHORIZER}

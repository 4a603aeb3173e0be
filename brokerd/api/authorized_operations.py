"""The ACL operations a client may perform on a resource, for the requests that ask for them
(Metadata v8+, DescribeCluster, DescribeGroups v3+; KIP-430).

brokerd's listeners are plaintext without authentication and it runs no authorizer. Kafka
without an authorizer answers every operation the resource type supports, so that is what
brokerd answers too: admin clients then show what a user could do, not an empty set.
"""

from __future__ import annotations

# Kafka's AclOperation codes
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

TOPIC = (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS)
CLUSTER = (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE)
GROUP = (READ, DESCRIBE, DELETE)


def authorized_operations(requested: bool, supported: tuple[int, ...]) -> set[int] | None:
    """The operation codes (the codec packs them into Kafka's 32-bit field); None, encoded as
    Kafka's "not requested" value, when the request did not ask."""
    return set(supported) if requested else None

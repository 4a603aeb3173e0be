"""The ACL operations a client may perform on a resource, for the requests that ask for them
(Metadata v8+, DescribeCluster, DescribeGroups v3+; KIP-430).

The authorizer answers which of the operations the resource type supports the session may
perform (Kafka's AuthHelper.authorizedOperations); without an authorizer that is every one of
them, as in Kafka. A client that may not DESCRIBE the cluster learns nothing of its operations
(an empty set), as Kafka answers Metadata and DescribeCluster.
"""

from __future__ import annotations

from kafka.admin import ACLOperation, ResourceType

from brokerd.api.authorization import allows_cluster
from brokerd.security.acl import CLUSTER_NAME
from brokerd.security.principal import Session
from brokerd.security.standard_authorizer import StandardAuthorizer


def authorized_operations(
    authorizer: StandardAuthorizer, session: Session, requested: bool, resource_type: ResourceType, name: str
) -> set[int] | None:
    """The operation codes (the codec packs them into Kafka's 32-bit field); None, encoded as
    Kafka's "not requested" value, when the request did not ask."""
    if not requested:
        return None
    return authorizer.authorized_operations(session, resource_type, name)


def cluster_operations(authorizer: StandardAuthorizer, session: Session, requested: bool) -> set[int] | None:
    if not requested:
        return None
    if not allows_cluster(authorizer, session, ACLOperation.DESCRIBE):
        return set()
    return authorized_operations(authorizer, session, True, ResourceType.CLUSTER, CLUSTER_NAME)

"""The shapes every handler's permission checks share, as Kafka's AuthHelper gives them.

A handler asks `Permission(...).allows(name)` for each resource a request names: one decision
per distinct name and request (Kafka's filterByAuthorized), so a produce request of a thousand
partitions of one topic costs one check and a denial is logged once. `refusal` turns a denial
into Kafka's error for the resource type, which the handler answers where Kafka does: per
partition, per topic, per group or for the whole request. Checks that Kafka makes without
logging a denial (a listing filtered silently, a cluster-wide permission tried before the
per-resource one) pass ``audit=False``.

Without an authorizer every check allows, as in Kafka. The checks take the authorizer and
the request's session: all they need of the broker and of the request.
"""

from __future__ import annotations

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import (
    BrokerResponseError,
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)

from brokerd.security.acl import CLUSTER_NAME
from brokerd.security.principal import Session
from brokerd.security.standard_authorizer import StandardAuthorizer


def _in_kafkas_words(error_class: type[BrokerResponseError], message: str) -> type[BrokerResponseError]:
    """The error class, answering Kafka's own message (Errors.java) as its error message."""
    return type(error_class.__name__, (error_class,), {"__str__": lambda self: message})


# Kafka's error for a denied request on a resource of each type
DENIED = {
    ResourceType.TOPIC: _in_kafkas_words(TopicAuthorizationFailedError, "Topic authorization failed."),
    ResourceType.GROUP: _in_kafkas_words(GroupAuthorizationFailedError, "Group authorization failed."),
    ResourceType.CLUSTER: _in_kafkas_words(ClusterAuthorizationFailedError, "Cluster authorization failed."),
    ResourceType.TRANSACTIONAL_ID: _in_kafkas_words(
        TransactionalIdAuthorizationFailedError, "Transactional Id authorization failed."
    ),
}


def denied(resource_type: ResourceType) -> Exception:
    return DENIED[resource_type]()


def denied_code(resource_type: ResourceType) -> int:
    return DENIED[resource_type].errno


def allows(
    authorizer: StandardAuthorizer,
    session: Session,
    operation: ACLOperation,
    resource_type: ResourceType,
    name: str,
    audit: bool = True,
) -> bool:
    return authorizer.authorize(session, operation, resource_type, name, audit)


def allows_cluster(
    authorizer: StandardAuthorizer, session: Session, operation: ACLOperation, audit: bool = True
) -> bool:
    return allows(authorizer, session, operation, ResourceType.CLUSTER, CLUSTER_NAME, audit)


def refusal(
    authorizer: StandardAuthorizer,
    session: Session,
    operation: ACLOperation,
    resource_type: ResourceType,
    name: str,
    audit: bool = True,
) -> Exception | None:
    """Kafka's error when the session may not do ``operation`` on the resource, else None."""
    if allows(authorizer, session, operation, resource_type, name, audit):
        return None
    return denied(resource_type)


def require(
    authorizer: StandardAuthorizer,
    session: Session,
    operation: ACLOperation,
    resource_type: ResourceType,
    name: str,
) -> None:
    """Raise Kafka's error when the session may not do ``operation`` on the resource, for
    handlers whose error path already answers an exception the way Kafka answers a denial."""
    refused = refusal(authorizer, session, operation, resource_type, name)
    if refused is not None:
        raise refused


def require_group(
    authorizer: StandardAuthorizer, session: Session, operation: ACLOperation, group_id: str
) -> None:
    """``require`` on a group: every group API's check."""
    require(authorizer, session, operation, ResourceType.GROUP, group_id)


def cluster_refusal(
    authorizer: StandardAuthorizer, session: Session, operation: ACLOperation
) -> Exception | None:
    return refusal(authorizer, session, operation, ResourceType.CLUSTER, CLUSTER_NAME)


class Permission:
    """One operation on resources of one type for one request, decided once per name."""

    def __init__(
        self,
        authorizer: StandardAuthorizer,
        session: Session,
        operation: ACLOperation,
        resource_type: ResourceType = ResourceType.TOPIC,
        audit: bool = True,
    ) -> None:
        self._authorizer = authorizer
        self._session = session
        self._operation = operation
        self.resource_type = resource_type
        self._audit = audit
        self._decided: dict[str, bool] = {}

    def allows(self, name: str) -> bool:
        if not self._authorizer.enabled:
            return True
        decided = self._decided.get(name)
        if decided is None:
            decided = self._decided[name] = self._authorizer.authorize(
                self._session, self._operation, self.resource_type, name, self._audit
            )
        return decided

    def refusal(self, name: str) -> Exception | None:
        """Kafka's error for a denied name, None when allowed."""
        return None if self.allows(name) else self.denial()

    def denial(self) -> Exception:
        """Kafka's error for a name this permission does not allow."""
        return denied(self.resource_type)

    def require(self, name: str) -> None:
        """Raise Kafka's error for a denied name."""
        if not self.allows(name):
            raise self.denial()


def decided(allowed: bool, resource_type: ResourceType = ResourceType.TOPIC) -> Permission:
    """A Permission decided alike for every name: a cluster-wide permission that covers them
    all (a follower's CLUSTER_ACTION), or its absence."""
    return _Decided(allowed, resource_type)


class _Decided(Permission):
    def __init__(self, allowed: bool, resource_type: ResourceType):
        self._allowed = allowed
        self.resource_type = resource_type

    def allows(self, name: str) -> bool:
        return self._allowed

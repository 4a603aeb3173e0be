"""The broker's authorizer: the ACL bindings of the state directory, `super.users` and
`allow.everyone.if.no.acl.found`, decided by the rules of brokerd.security.authorizer.

Without `authorizer.class.name` there is no authorizer, as in Kafka: every request is allowed
and the ACL APIs answer SECURITY_DISABLED.
"""

from __future__ import annotations

from collections import defaultdict

from kafka.admin import ACLOperation, ResourceType

from brokerd.security import authorizer
from brokerd.security.acl import AclBinding
from brokerd.security.audit import SecurityAudit
from brokerd.security.principal import Session
from brokerd.state import ClusterState

# Kafka's names for its authorizers; brokerd runs the StandardAuthorizer's rules for any of them.
KNOWN_AUTHORIZERS = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
)


class StandardAuthorizer:
    def __init__(
        self,
        state: ClusterState,
        class_name: str,
        super_users: str,
        allow_if_no_acl: bool,
        audit: SecurityAudit,
    ):
        if class_name and class_name not in KNOWN_AUTHORIZERS:
            raise ValueError(
                f"authorizer.class.name {class_name} is not supported: use {KNOWN_AUTHORIZERS[0]}"
            )
        self.enabled = bool(class_name)
        self.super_users = frozenset(u.strip() for u in super_users.split(";") if u.strip())
        self.allow_if_no_acl = allow_if_no_acl
        self._state = state
        self._audit = audit
        self._version: object = object()
        self._by_type: dict[ResourceType, list[AclBinding]] = {}
        self.bindings: list[AclBinding] = []

    def refresh(self) -> None:
        """Re-read the bindings when the file changed (a stat per call otherwise)."""
        version = self._state.acl_bindings_version()
        if version != self._version:
            self._version = version
            self.bindings = [AclBinding.from_json(b) for b in self._state.acl_bindings()]
            by_type: dict[ResourceType, list[AclBinding]] = defaultdict(list)
            for binding in self.bindings:
                by_type[binding.resource_type].append(binding)
            self._by_type = dict(by_type)

    def authorize(
        self,
        session: Session,
        operation: ACLOperation,
        resource_type: ResourceType,
        name: str,
        audit: bool = True,
    ) -> bool:
        """Whether the session may do ``operation`` on the resource; a denial is logged and
        recorded for `kctl watch` unless ``audit`` is off (for filtering, as Metadata does)."""
        if not self.enabled:
            return True
        decision = authorizer.explain(
            self._by_type.get(resource_type, ()),
            str(session.principal),
            session.client_host,
            operation,
            resource_type,
            name,
            self.super_users,
            self.allow_if_no_acl,
        )
        if not decision.allowed and audit:
            self._audit.authorization_denied(
                str(session.principal),
                session.client_host,
                operation.name,
                f"{resource_type.name}:{name}",
                decision.rule,
            )
        return decision.allowed

    def authorize_any(self, session: Session, operation: ACLOperation, resource_type: ResourceType) -> bool:
        """Whether the session may do ``operation`` on some resource of the type."""
        if not self.enabled:
            return True
        return authorizer.allowed_on_any(
            self._by_type.get(resource_type, ()),
            str(session.principal),
            session.client_host,
            operation,
            resource_type,
            self.super_users,
        )

    def authorized_operations(self, session: Session, resource_type: ResourceType, name: str) -> set[int]:
        """KIP-430: the operations the session may perform on the resource."""
        return {
            int(op)
            for op in authorizer.SUPPORTED_OPERATIONS[resource_type]
            if self.authorize(session, op, resource_type, name, audit=False)
        }

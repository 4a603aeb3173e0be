"""The authorizer: Kafka's StandardAuthorizer rules over the cluster's ACL bindings.

The order of the rules is Kafka's (StandardAuthorizerData): a super user may do anything; a
matching DENY wins over any ALLOW; a matching ALLOW allows, where ALLOW of READ, WRITE, DELETE
or ALTER also allows DESCRIBE and ALLOW of ALTER_CONFIGS also allows DESCRIBE_CONFIGS; with no
binding at all for the resource, `allow.everyone.if.no.acl.found` decides; bindings for the
resource that do not match the request deny it. A binding matches the principal or `User:*`,
the client's host or `*`, and the resource by its literal name, the `*` wildcard or a prefix.

`explain` returns which rule decided, for `kctl acl explain` and for the denial events that
`kctl watch` shows; `AclAuthorizer` adds the bindings of the state directory and the settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType

from brokerd.security.acl import WILDCARD, AclBinding

IMPLIED_BY: dict[ACLOperation, tuple[ACLOperation, ...]] = {
    ACLOperation.DESCRIBE: (ACLOperation.READ, ACLOperation.WRITE, ACLOperation.DELETE, ACLOperation.ALTER),
    ACLOperation.DESCRIBE_CONFIGS: (ACLOperation.ALTER_CONFIGS,),
}

# The operations each resource type supports, for KIP-430's authorized_operations fields.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[ACLOperation, ...]] = {
    ResourceType.TOPIC: (
        ACLOperation.READ,
        ACLOperation.WRITE,
        ACLOperation.CREATE,
        ACLOperation.DESCRIBE,
        ACLOperation.DELETE,
        ACLOperation.ALTER,
        ACLOperation.DESCRIBE_CONFIGS,
        ACLOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        ACLOperation.CREATE,
        ACLOperation.CLUSTER_ACTION,
        ACLOperation.DESCRIBE_CONFIGS,
        ACLOperation.ALTER_CONFIGS,
        ACLOperation.IDEMPOTENT_WRITE,
        ACLOperation.ALTER,
        ACLOperation.DESCRIBE,
    ),
    ResourceType.GROUP: (ACLOperation.READ, ACLOperation.DESCRIBE, ACLOperation.DELETE),
    ResourceType.TRANSACTIONAL_ID: (ACLOperation.DESCRIBE, ACLOperation.WRITE),
}


@dataclass(frozen=True)
class Decision:
    allowed: bool
    rule: str  # which rule decided, in a sentence
    binding: AclBinding | None = None  # the binding that decided, if one did


def applies_to(binding: AclBinding, resource_type: ResourceType, name: str) -> bool:
    """Whether a binding names this resource: literally, by the wildcard, or by a prefix."""
    if binding.resource_type != resource_type:
        return False
    if binding.pattern_type == ACLResourcePatternType.PREFIXED:
        return name.startswith(binding.resource_name)
    return binding.resource_name in (name, WILDCARD)


def _matches_session(binding: AclBinding, principal: str, host: str) -> bool:
    return binding.principal in (principal, "User:*") and binding.host in (host, WILDCARD)


def _grants(binding: AclBinding, operation: ACLOperation) -> bool:
    if binding.operation in (operation, ACLOperation.ALL):
        return True
    return binding.permission == ACLPermissionType.ALLOW and binding.operation in IMPLIED_BY.get(
        operation, ()
    )


def explain(
    bindings: Iterable[AclBinding],
    principal: str,
    host: str,
    operation: ACLOperation,
    resource_type: ResourceType,
    name: str,
    super_users: frozenset[str],
    allow_if_no_acl: bool,
) -> Decision:
    """Decide one request, saying which rule decided (StandardAuthorizerData's order)."""
    if principal in super_users:
        return Decision(True, f"{principal} is a super user (super.users)")
    on_resource = [b for b in bindings if applies_to(b, resource_type, name)]
    matching = [b for b in on_resource if _matches_session(b, principal, host) and _grants(b, operation)]
    deny = next((b for b in matching if b.permission == ACLPermissionType.DENY), None)
    if deny is not None:
        return Decision(False, f"denied by {deny} (a DENY wins over any ALLOW)", deny)
    allow = next((b for b in matching if b.permission == ACLPermissionType.ALLOW), None)
    if allow is not None:
        implied = (
            ""
            if allow.operation in (operation, ACLOperation.ALL)
            else f" ({operation.name} is implied by {allow.operation.name})"
        )
        return Decision(True, f"allowed by {allow}{implied}", allow)
    if not on_resource:
        return Decision(
            allow_if_no_acl,
            f"no ACL names {resource_type.name}:{name}, so "
            f"allow.everyone.if.no.acl.found={str(allow_if_no_acl).lower()} decides",
        )
    return Decision(
        False,
        f"ACLs exist for {resource_type.name}:{name} but none allows "
        f"{principal} {operation.name} from {host} (default deny)",
    )


def allowed_on_any(
    bindings: Iterable[AclBinding],
    principal: str,
    host: str,
    operation: ACLOperation,
    resource_type: ResourceType,
    super_users: frozenset[str],
) -> bool:
    """Whether some resource of a type allows the operation (Kafka's authorizeByResourceType,
    used where a client needs WRITE on any topic, as an idempotent producer does): an ALLOW
    binding that no DENY binding covers."""
    if principal in super_users:
        return True
    relevant = [
        b
        for b in bindings
        if b.resource_type == resource_type and _matches_session(b, principal, host) and _grants(b, operation)
    ]
    denies = [b for b in relevant if b.permission == ACLPermissionType.DENY]
    if any(d.resource_name == WILDCARD and d.pattern_type == ACLResourcePatternType.LITERAL for d in denies):
        return False
    return any(
        b.permission == ACLPermissionType.ALLOW and not any(_covers(d, b) for d in denies) for b in relevant
    )


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Whether a DENY takes away every resource an ALLOW names."""
    if deny.pattern_type == ACLResourcePatternType.PREFIXED:
        return allow.resource_name.startswith(deny.resource_name)
    return allow.pattern_type == ACLResourcePatternType.LITERAL and deny.resource_name == allow.resource_name

"""ACL bindings and filters from kctl's options, as kafka-acls.sh and rpk take them
(--allow-principal, --operation, --topic, --resource-pattern-type ...), and their table rows.

Bindings and filters are brokerd's AclBinding and AclBindingFilter, which carry Kafka's names
(TOPIC, WRITE, ALLOW, LITERAL): the types the authorizer's rules take, so `kctl acl explain`
runs those rules on exactly what the cluster answered (kctl.kafka.acls sends and receives
them), and the checks Kafka makes of a new binding run before it is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType

from brokerd.security.acl import CLUSTER_NAME, AclBinding, AclBindingFilter, InvalidAcl
from brokerd.security.principal import KafkaPrincipal
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

WILDCARD = "*"
OPERATIONS: dict[str, ACLOperation] = {
    "read": ACLOperation.READ,
    "write": ACLOperation.WRITE,
    "create": ACLOperation.CREATE,
    "delete": ACLOperation.DELETE,
    "alter": ACLOperation.ALTER,
    "describe": ACLOperation.DESCRIBE,
    "cluster-action": ACLOperation.CLUSTER_ACTION,
    "describe-configs": ACLOperation.DESCRIBE_CONFIGS,
    "alter-configs": ACLOperation.ALTER_CONFIGS,
    "idempotent-write": ACLOperation.IDEMPOTENT_WRITE,
    "all": ACLOperation.ALL,
    "any": ACLOperation.ANY,
}
PATTERN_TYPES = ("literal", "prefixed", "match", "any")
COLUMNS = ["principal", "host", "operation", "permission", "resource-type", "resource-name", "pattern-type"]


@dataclass(frozen=True)
class Resource:
    """A resource an option names; `name` None (with type ANY) is every resource, for filters."""

    type: ResourceType
    name: str | None

    def __str__(self) -> str:
        return f"{self.type.name}:{self.name}"


@dataclass(frozen=True)
class Who:
    """The principals and hosts an ACL command names: ALLOW ones, DENY ones and (filters
    only) ones of either permission."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    deny_hosts: tuple[str, ...] = ()
    either: tuple[str, ...] = ()


def operation(text: str, allowed: tuple[str, ...] = tuple(OPERATIONS)) -> ACLOperation:
    """An operation as kafka-acls.sh writes it (read, cluster-action, DescribeConfigs,
    IDEMPOTENT_WRITE all work); exit 5 for another word."""
    key = text.replace("_", "-").lower()
    key = {
        "clusteraction": "cluster-action",
        "describeconfigs": "describe-configs",
        "alterconfigs": "alter-configs",
        "idempotentwrite": "idempotent-write",
    }.get(key, key)
    if key not in allowed:
        raise KctlError(
            f"invalid operation {text!r}: expected one of {', '.join(allowed)}", ExitCode.INVALID_INPUT
        )
    return OPERATIONS[key]


def pattern_type(text: str, allowed: tuple[str, ...] = PATTERN_TYPES) -> ACLResourcePatternType:
    if text.lower() not in allowed:
        raise KctlError(
            f"invalid resource pattern type {text!r}: expected one of {', '.join(allowed)}",
            ExitCode.INVALID_INPUT,
        )
    return ACLResourcePatternType[text.upper()]


def principal(text: str) -> str:
    """`Type:name` as Kafka parses it (User:alice, User:*, User:CN=admin); exit 5 otherwise."""
    try:
        return str(KafkaPrincipal.parse(text))
    except ValueError as exc:
        raise KctlError(str(exc), ExitCode.INVALID_INPUT) from None


def resources(
    topics: list[str], groups: list[str], cluster: bool, transactional_ids: list[str]
) -> list[Resource]:
    return (
        [Resource(ResourceType.TOPIC, t) for t in topics]
        + [Resource(ResourceType.GROUP, g) for g in groups]
        + ([Resource(ResourceType.CLUSTER, CLUSTER_NAME)] if cluster else [])
        + [Resource(ResourceType.TRANSACTIONAL_ID, t) for t in transactional_ids]
    )


def new_bindings(
    on: list[Resource], pattern: ACLResourcePatternType, who: Who, operations: list[ACLOperation]
) -> list[AclBinding]:
    """Every combination of resource, principal, host and operation, checked as Kafka checks
    a new binding (exit 5 with Kafka's message)."""
    grants = _grants(who, WILDCARD)
    bindings = [
        AclBinding(r.type, r.name, pattern, p, h, op, permission)
        for r, (p, permission, h), op in product(on, grants, operations)
    ]
    for binding in bindings:
        try:
            binding.validate()
        except InvalidAcl as exc:
            raise KctlError(f"invalid ACL {binding}: {exc}", ExitCode.INVALID_INPUT) from None
    return list(dict.fromkeys(bindings))


def filters(
    on: list[Resource], pattern: ACLResourcePatternType, who: Who, operations: list[ACLOperation]
) -> list[AclBindingFilter]:
    """Filters for DescribeAcls and DeleteAcls: what is not named matches anything."""
    grants = _grants(who, None) + [(p, ACLPermissionType.ANY, None) for p in who.either]
    grants += [(None, ACLPermissionType.ALLOW, h) for h in who.allow_hosts if not who.allow]
    grants += [(None, ACLPermissionType.DENY, h) for h in who.deny_hosts if not who.deny]
    return list(
        dict.fromkeys(
            AclBindingFilter(r.type, r.name, pattern, p, h, op, permission)
            for r, (p, permission, h), op in product(
                on or [Resource(ResourceType.ANY, None)],
                grants or [(None, ACLPermissionType.ANY, None)],
                operations or [ACLOperation.ANY],
            )
        )
    )


def _grants(who: Who, default_host: str | None) -> list[tuple[str | None, ACLPermissionType, str | None]]:
    return [(p, ACLPermissionType.ALLOW, h) for p in who.allow for h in who.allow_hosts or [default_host]] + [
        (p, ACLPermissionType.DENY, h) for p in who.deny for h in who.deny_hosts or [default_host]
    ]


def row(binding: AclBinding) -> list[str]:
    """One table row: principal, host, operation, permission, resource type, name, pattern."""
    return [
        binding.principal,
        binding.host,
        binding.operation.name,
        binding.permission.name,
        binding.resource_type.name,
        binding.resource_name,
        binding.pattern_type.name,
    ]

"""ACL bindings and binding filters (KIP-11, prefixed patterns of KIP-290), as Kafka's
AclBinding and AclBindingFilter define them: what CreateAcls stores and what DescribeAcls and
DeleteAcls match."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType

from brokerd.security.principal import KafkaPrincipal

WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"


class InvalidAcl(ValueError):
    """A binding CreateAcls must refuse (INVALID_REQUEST), with Kafka's message."""


@dataclass(frozen=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: ACLResourcePatternType
    principal: str
    host: str
    operation: ACLOperation
    permission: ACLPermissionType

    def to_json(self) -> dict:
        return {
            **asdict(self),
            "resource_type": self.resource_type.name,
            "pattern_type": self.pattern_type.name,
            "operation": self.operation.name,
            "permission": self.permission.name,
        }

    @classmethod
    def from_json(cls, doc: dict) -> AclBinding:
        return cls(
            ResourceType[doc["resource_type"]],
            doc["resource_name"],
            ACLResourcePatternType[doc["pattern_type"]],
            doc["principal"],
            doc["host"],
            ACLOperation[doc["operation"]],
            ACLPermissionType[doc["permission"]],
        )

    def __str__(self) -> str:
        return (
            f"{self.permission.name} {self.principal} {self.operation.name} on "
            f"{self.resource_type.name}:{self.pattern_type.name}:{self.resource_name} "
            f"from host {self.host}"
        )

    def validate(self) -> None:
        """Kafka's checks of a new binding (AclControlManager.validateNewAcl, AclApis)."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidAcl(f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (ACLResourcePatternType.LITERAL, ACLResourcePatternType.PREFIXED):
            raise InvalidAcl(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (ACLOperation.UNKNOWN, ACLOperation.ANY):
            raise InvalidAcl(f"Invalid operation {self.operation.name}")
        if self.permission not in (ACLPermissionType.ALLOW, ACLPermissionType.DENY):
            raise InvalidAcl(f"Invalid permissionType {self.permission.name}")
        if not self.resource_name:
            raise InvalidAcl("Resource name should not be empty")
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        try:
            KafkaPrincipal.parse(self.principal)
        except ValueError:
            raise InvalidAcl(
                f"Could not parse principal from `{self.principal}` (no colon is "
                "present separating the principal type from the principal name)"
            ) from None


@dataclass(frozen=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls send: None matches any name, principal or host; ANY
    matches every type, operation and permission; MATCH finds the bindings that would apply
    to the named resource (literal, the `*` wildcard, and prefixes of the name)."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: ACLResourcePatternType
    principal: str | None
    host: str | None
    operation: ACLOperation
    permission: ACLPermissionType

    def matches(self, binding: AclBinding) -> bool:
        return (
            self.resource_type in (ResourceType.ANY, binding.resource_type)
            and self._matches_pattern(binding)
            and self.principal in (None, binding.principal)
            and self.host in (None, binding.host)
            and self.operation in (ACLOperation.ANY, binding.operation)
            and self.permission in (ACLPermissionType.ANY, binding.permission)
        )

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.pattern_type == ACLResourcePatternType.MATCH:
            if self.resource_name is None:
                return True
            if binding.pattern_type == ACLResourcePatternType.PREFIXED:
                return self.resource_name.startswith(binding.resource_name)
            return binding.resource_name in (self.resource_name, WILDCARD)
        return self.pattern_type in (
            ACLResourcePatternType.ANY,
            binding.pattern_type,
        ) and self.resource_name in (None, binding.resource_name)

    def invalid_reason(self) -> str | None:
        """Why a filter is refused (INVALID_REQUEST), or None."""
        unknown = (
            self.resource_type == ResourceType.UNKNOWN
            or self.pattern_type == ACLResourcePatternType.UNKNOWN
            or self.operation == ACLOperation.UNKNOWN
            or self.permission == ACLPermissionType.UNKNOWN
        )
        return "The ACL filter contains UNKNOWN elements" if unknown else None

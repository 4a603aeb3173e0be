"""CreateAcls, DescribeAcls and DeleteAcls (v0-3) over the ACL bindings of the state directory.

Creating and deleting need ALTER on the cluster, describing needs DESCRIBE on it, as in Kafka.
Without an authorizer (no `authorizer.class.name`) there is nothing to keep ACLs for, and
Kafka's answer is SECURITY_DISABLED with its own message.
"""

from __future__ import annotations

from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType
from kafka.errors import ClusterAuthorizationFailedError, InvalidRequestError, SecurityDisabledError

from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices
from brokerd.security.acl import CLUSTER_NAME, AclBinding, AclBindingFilter, InvalidAcl
from brokerd.security.principal import Session
from brokerd.security.standard_authorizer import StandardAuthorizer

NO_AUTHORIZER = "No Authorizer is configured on the broker"  # Kafka's own words
LITERAL_BEFORE_V1 = ACLResourcePatternType.LITERAL  # v0 has no pattern type field


def _error(exc_class, message: str | None = None) -> dict:
    return {"error_code": exc_class.errno, "error_message": message}


def _refusal(authorizer: StandardAuthorizer, session: Session, operation: ACLOperation) -> dict | None:
    """SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED without the
    cluster permission, else None."""
    if not authorizer.enabled:
        return _error(SecurityDisabledError, NO_AUTHORIZER)
    if not authorizer.authorize(session, operation, ResourceType.CLUSTER, CLUSTER_NAME):
        return _error(ClusterAuthorizationFailedError, "Cluster authorization failed.")
    return None


async def handle_create(services: BrokerServices, request: Request) -> dict:
    refused = _refusal(services.security.authorizer, request.session, ACLOperation.ALTER)
    if refused is not None:
        return {"throttle_time_ms": 0, "results": [refused for _ in request.body.creations]}
    results, accepted = [], []
    for creation in request.body.creations:
        try:
            binding = _binding(creation, request.header.api_version)
            binding.validate()
        except InvalidAcl as exc:
            results.append(_error(InvalidRequestError, str(exc)))
            continue
        accepted.append(binding)
        results.append({"error_code": 0, "error_message": None})
    if accepted:
        with services.security.acls.update_acl_bindings() as stored:
            known = {AclBinding.from_json(b) for b in stored}
            stored += [b.to_json() for b in dict.fromkeys(accepted) if b not in known]
        services.security.authorizer.refresh()
    return {"throttle_time_ms": 0, "results": results}


async def handle_describe(services: BrokerServices, request: Request) -> dict:
    refused = _refusal(services.security.authorizer, request.session, ACLOperation.DESCRIBE)
    if refused is not None:
        return {"throttle_time_ms": 0, **refused, "resources": []}
    acl_filter = _filter(request.body, request.header.api_version)
    reason = acl_filter.invalid_reason()
    if reason is not None:
        return {"throttle_time_ms": 0, **_error(InvalidRequestError, reason), "resources": []}
    services.security.authorizer.refresh()
    resources: dict[tuple, list[dict]] = {}
    for binding in services.security.authorizer.bindings:
        if acl_filter.matches(binding):
            key = (int(binding.resource_type), binding.resource_name, int(binding.pattern_type))
            resources.setdefault(key, []).append(
                {
                    "principal": binding.principal,
                    "host": binding.host,
                    "operation": int(binding.operation),
                    "permission_type": int(binding.permission),
                }
            )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "resources": [
            {"resource_type": rtype, "resource_name": name, "pattern_type": ptype, "acls": acls}
            for (rtype, name, ptype), acls in resources.items()
        ],
    }


async def handle_delete(services: BrokerServices, request: Request) -> dict:
    refused = _refusal(services.security.authorizer, request.session, ACLOperation.ALTER)
    if refused is not None:
        return {
            "throttle_time_ms": 0,
            "filter_results": [{**refused, "matching_acls": []} for _ in request.body.filters],
        }
    filters = [_filter(f, request.header.api_version) for f in request.body.filters]
    results: list[dict] = []
    with services.security.acls.update_acl_bindings() as stored:
        bindings = [AclBinding.from_json(b) for b in stored]
        deleted: set[AclBinding] = set()
        for acl_filter in filters:
            reason = acl_filter.invalid_reason()
            if reason is not None:
                results.append({**_error(InvalidRequestError, reason), "matching_acls": []})
                continue
            matching = [b for b in bindings if acl_filter.matches(b)]
            deleted.update(matching)
            results.append(
                {
                    "error_code": 0,
                    "error_message": None,
                    "matching_acls": [_matching_acl(b) for b in matching],
                }
            )
        stored[:] = [b.to_json() for b in bindings if b not in deleted]
    services.security.authorizer.refresh()
    return {"throttle_time_ms": 0, "filter_results": results}


def _matching_acl(binding: AclBinding) -> dict:
    return {
        "error_code": 0,
        "error_message": None,
        "resource_type": int(binding.resource_type),
        "resource_name": binding.resource_name,
        "pattern_type": int(binding.pattern_type),
        "principal": binding.principal,
        "host": binding.host,
        "operation": int(binding.operation),
        "permission_type": int(binding.permission),
    }


def _binding(creation, version: int) -> AclBinding:
    pattern = creation.resource_pattern_type if version >= 1 else LITERAL_BEFORE_V1
    return AclBinding(
        _enum(ResourceType, creation.resource_type),
        creation.resource_name,
        _enum(ACLResourcePatternType, pattern),
        creation.principal,
        creation.host,
        _enum(ACLOperation, creation.operation),
        _enum(ACLPermissionType, creation.permission_type),
    )


def _filter(body, version: int) -> AclBindingFilter:
    pattern = body.pattern_type_filter if version >= 1 else LITERAL_BEFORE_V1
    return AclBindingFilter(
        _enum(ResourceType, body.resource_type_filter),
        body.resource_name_filter,
        _enum(ACLResourcePatternType, pattern),
        body.principal_filter,
        body.host_filter,
        _enum(ACLOperation, body.operation),
        _enum(ACLPermissionType, body.permission_type),
    )


def _enum(kind, code: int):
    """A code a client sent; one this broker does not know reads as UNKNOWN."""
    try:
        return kind(code)
    except ValueError:
        return kind.UNKNOWN

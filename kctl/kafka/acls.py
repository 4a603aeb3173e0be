"""ACLs over the wire: CreateAcls, DescribeAcls and DeleteAcls through confluent-kafka's admin
client, so `kctl acl` works against any Kafka cluster. Bindings go out and come back as
brokerd's AclBinding and AclBindingFilter (kctl.acl.aclbindings makes them from the options).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from confluent_kafka import KafkaException
from confluent_kafka import admin as confluent
from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType

from brokerd.security.acl import AclBinding, AclBindingFilter
from kctl.kafka.client import Connection, result
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode


def create(conn: Connection, bindings: list[AclBinding]) -> None:
    """Create the bindings; one the cluster refuses fails the command."""
    admin = conn.admin()  # referenced until the futures are done: a destroyed client fails them
    futures = _call(
        lambda: admin.create_acls([_to_confluent(b) for b in bindings], request_timeout=conn.timeout),
        "create ACLs",
    )
    for future in futures.values():
        result(future, "create ACLs")


def describe(conn: Connection, acl_filters: list[AclBindingFilter]) -> list[AclBinding]:
    """The bindings any of the filters match, each once, in a stable order."""
    admin = conn.admin()

    def matching(acl_filter: AclBindingFilter) -> list[AclBinding]:
        future = _call(
            lambda: admin.describe_acls(_filter_to_confluent(acl_filter), request_timeout=conn.timeout),
            "list ACLs",
        )
        return [_from_confluent(b) for b in result(future, "list ACLs")]

    found: dict[AclBinding, None] = {}
    for acl_filter in acl_filters:
        found.update(dict.fromkeys(matching(acl_filter)))
    return _ordered(found)


def delete(conn: Connection, acl_filters: list[AclBindingFilter]) -> list[AclBinding]:
    """Delete what the filters match; returns the bindings deleted."""
    admin = conn.admin()
    futures = _call(
        lambda: admin.delete_acls(
            [_filter_to_confluent(f) for f in acl_filters], request_timeout=conn.timeout
        ),
        "delete ACLs",
    )
    deleted: dict[AclBinding, None] = {}
    for future in futures.values():
        deleted.update(dict.fromkeys(_from_confluent(b) for b in result(future, "delete ACLs")))
    return _ordered(deleted)


def _ordered(bindings) -> list[AclBinding]:
    return sorted(
        bindings,
        key=lambda b: (
            b.resource_type,
            b.resource_name,
            b.pattern_type,
            b.principal,
            b.host,
            b.operation,
            b.permission,
        ),
    )


def _call(request: Callable[[], Any], doing: str) -> Any:
    """An admin call whose arguments librdkafka rejects before sending is exit 5."""
    try:
        return request()
    except (KafkaException, ValueError, TypeError) as exc:
        raise KctlError(f"cannot {doing}: {exc}", ExitCode.INVALID_INPUT) from None


def _to_confluent(b: AclBinding) -> confluent.AclBinding:
    return confluent.AclBinding(
        int(b.resource_type),
        b.resource_name,
        int(b.pattern_type),
        b.principal,
        b.host,
        int(b.operation),
        int(b.permission),
    )


def _filter_to_confluent(f: AclBindingFilter) -> confluent.AclBindingFilter:
    # A filter's name, principal and host may be None (any), as confluent-kafka documents,
    # but its AclBindingFilter inherits AclBinding's constructor, typed str for all three.
    return confluent.AclBindingFilter(
        int(f.resource_type),
        f.resource_name,  # type: ignore[arg-type]
        int(f.pattern_type),
        f.principal,  # type: ignore[arg-type]
        f.host,  # type: ignore[arg-type]
        int(f.operation),
        int(f.permission),
    )


def _from_confluent(b: confluent.AclBinding) -> AclBinding:
    # AclBinding's constructor turns these into their enums; confluent-kafka types the
    # attributes with the str and int the constructor also takes.
    return AclBinding(
        ResourceType(cast(confluent.ResourceType, b.restype).value),
        b.name,
        ACLResourcePatternType(cast(confluent.ResourcePatternType, b.resource_pattern_type).value),
        b.principal,
        b.host,
        ACLOperation(cast(confluent.AclOperation, b.operation).value),
        ACLPermissionType(cast(confluent.AclPermissionType, b.permission_type).value),
    )

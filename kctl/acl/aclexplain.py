"""`kctl acl explain`: which rule allows or denies one principal one operation on one resource.

The bindings come from the cluster (DescribeAcls), the authorizer's settings (`super.users`,
`allow.everyone.if.no.acl.found`) from the local cluster's kctl.json when the command talks to
it, else from the broker's configs (DescribeConfigs); the decision is made by the same rules
the brokers run (brokerd.security.authorizer, Kafka's StandardAuthorizer order), so the answer
is the broker's, with the rule that decided it in words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka.admin import ACLOperation, ACLResourcePatternType

from brokerd.security import authorizer
from brokerd.security.acl import AclBinding
from kctl.acl import aclbindings
from kctl.acl.aclbindings import Resource
from kctl.cluster import brokerconfig
from kctl.cluster.securecluster import ALLOW_IF_NO_ACL, SUPER_USERS
from kctl.kafka import acls as acl_requests
from kctl.kafka import clientprops, configs
from kctl.kafka.client import Connection, fetch_metadata
from kctl.shell.errors import KctlError

Decide = Callable[..., authorizer.Decision]


@dataclass(frozen=True)
class Explanation:
    """One request, the decision on it and what the decision was made from."""

    principal: str
    host: str
    operation: ACLOperation
    resource: Resource
    decision: authorizer.Decision
    acls: list[AclBinding]  # the bindings that name the resource
    super_users: list[str]
    allow_if_no_acl: bool

    def lines(self) -> list[str]:
        """The verdict with the request, then the rule that decided it."""
        verdict = "ALLOWED" if self.decision.allowed else "DENIED"
        return [
            f"{verdict}: {self.principal} {self.operation.name} on {self.resource} from {self.host}",
            f"  rule: {self.decision.rule}",
        ]

    def to_json(self) -> dict:
        binding = self.decision.binding
        return {
            "allowed": self.decision.allowed,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation.name,
            "resource": str(self.resource),
            "rule": self.decision.rule,
            "binding": None if binding is None else binding.to_json(),
            "super_users": self.super_users,
            "allow_everyone_if_no_acl_found": self.allow_if_no_acl,
            "acls": [b.to_json() for b in self.acls],
        }


def explain(
    conn: Connection,
    principal: str,
    host: str,
    operation: ACLOperation,
    resource: Resource,
    decide: Decide = authorizer.explain,
) -> Explanation:
    """Decide the request with `decide` (the brokers' rules) over the cluster's ACLs."""
    every = aclbindings.filters(
        [Resource(resource.type, None)], ACLResourcePatternType.ANY, aclbindings.Who(), []
    )
    bindings = acl_requests.describe(conn, every)
    super_users, allow_if_no_acl = authorizer_settings(conn)
    decision = decide(
        bindings,
        principal,
        host,
        operation,
        resource.type,
        resource.name,
        frozenset(super_users),
        allow_if_no_acl,
    )
    return Explanation(
        principal,
        host,
        operation,
        resource,
        decision,
        applying(bindings, resource),
        super_users,
        allow_if_no_acl,
    )


def applying(bindings: list[AclBinding], resource: Resource) -> list[AclBinding]:
    """The bindings that name the resource: literally, by the `*` wildcard or by a prefix."""
    name = resource.name
    assert name is not None  # one resource the options named, not every one of its type
    return [b for b in bindings if authorizer.applies_to(b, resource.type, name)]


def authorizer_settings(conn: Connection) -> tuple[list[str], bool]:
    """(super users, allow.everyone.if.no.acl.found) of the cluster the connection talks to."""
    if clientprops.is_local(conn.bootstrap):
        settings = brokerconfig.remembered(conn.bootstrap.cluster_dir)
    else:
        settings = _broker_configs(conn)
    users = [u.strip() for u in settings.get(SUPER_USERS, "").split(";") if u.strip()]
    return users, settings.get(ALLOW_IF_NO_ACL, "false").strip().lower() == "true"


def _broker_configs(conn: Connection) -> dict[str, str]:
    """A broker's settings by DescribeConfigs ({} when it refuses: Kafka's defaults then hold)."""
    broker = min(fetch_metadata(conn.admin(), conn).brokers)
    try:
        described = configs.broker_configs(conn, broker)
    except KctlError:
        return {}
    return {name: config["value"] for name, config in described.items() if config["value"] is not None}

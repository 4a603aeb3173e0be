"""`kctl acl create|list|delete|explain`: ACLs with kafka-acls.sh's and rpk's options."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Annotated

import typer

from brokerd.security.acl import AclBinding
from kctl.acl import aclbindings, aclexplain
from kctl.acl.aclbindings import Who
from kctl.kafka import acls as acl_requests
from kctl.kafka.client import Connection, checked, connect
from kctl.shell import console
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import Json

app = typer.Typer(
    help="Create, list, delete and explain ACLs (KIP-11; prefixed patterns, KIP-290). A request "
    "is allowed when its principal is a super user, or an ALLOW binding matches and no DENY "
    "does; see `kctl acl explain` and docs/security.md.",
    no_args_is_help=True,
)

Names = list[str] | None
AllowPrincipal = Annotated[
    Names,
    typer.Option(
        "--allow-principal",
        metavar="PRINCIPAL",
        show_default=False,
        help="Principal the ACL allows, Type:name: User:alice, User:CN=app, User:* (repeatable).",
    ),
]
DenyPrincipal = Annotated[
    Names,
    typer.Option(
        "--deny-principal",
        metavar="PRINCIPAL",
        show_default=False,
        help="Principal the ACL denies; a DENY wins over any ALLOW (repeatable).",
    ),
]
AllowHost = Annotated[
    Names,
    typer.Option(
        "--allow-host",
        metavar="HOST",
        show_default=False,
        help="Client address the ALLOW holds for (repeatable) [create: *, every host].",
    ),
]
DenyHost = Annotated[
    Names,
    typer.Option(
        "--deny-host",
        metavar="HOST",
        show_default=False,
        help="Client address the DENY holds for (repeatable) [create: *, every host].",
    ),
]
Operation = Annotated[
    Names,
    typer.Option(
        "--operation",
        metavar="OP",
        show_default=False,
        help="read, write, create, delete, alter, describe, cluster-action, describe-configs, "
        "alter-configs, idempotent-write or all (repeatable).",
    ),
]
Topic = Annotated[
    Names,
    typer.Option(
        "--topic", metavar="TOPIC", show_default=False, help="Topic name, or * for every topic (repeatable)."
    ),
]
Group = Annotated[
    Names,
    typer.Option(
        "--group", metavar="GROUP", show_default=False, help="Consumer group id, or * (repeatable)."
    ),
]
Cluster = Annotated[bool, typer.Option("--cluster", help="The cluster resource (kafka-cluster).")]
TransactionalId = Annotated[
    Names,
    typer.Option(
        "--transactional-id", metavar="ID", show_default=False, help="Transactional id, or * (repeatable)."
    ),
]
Principal = Annotated[
    Names,
    typer.Option(
        "--principal",
        metavar="PRINCIPAL",
        show_default=False,
        help="Only ACLs of this principal, ALLOW or DENY (repeatable).",
    ),
]
PatternCreate = Annotated[
    str,
    typer.Option(
        "--resource-pattern-type",
        metavar="literal|prefixed",
        help="literal: the resource named; prefixed: every resource whose name starts with it.",
    ),
]
PatternFilter = Annotated[
    str,
    typer.Option(
        "--resource-pattern-type",
        metavar="literal|prefixed|match|any",
        help="Which ACLs a resource option selects: literal or prefixed ones named exactly so, "
        "match: every ACL that applies to the resource (its literal name, *, prefixes), any: both.",
    ),
]


def _who(allow: Names, deny: Names, allow_hosts: Names, deny_hosts: Names, either: Names = None) -> Who:
    def principals(names: Names) -> tuple[str, ...]:
        return tuple(aclbindings.principal(p) for p in names or [])

    return Who(
        principals(allow),
        principals(deny),
        tuple(allow_hosts or []),
        tuple(deny_hosts or []),
        principals(either),
    )


@app.command()
@connection_options()
def create(
    allow_principal: AllowPrincipal = None,
    deny_principal: DenyPrincipal = None,
    allow_host: AllowHost = None,
    deny_host: DenyHost = None,
    operation: Operation = None,
    topic: Topic = None,
    group: Group = None,
    cluster: Cluster = False,
    transactional_id: TransactionalId = None,
    pattern: PatternCreate = "literal",
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Create ACLs: one per principal, host, operation and resource given.

    `kctl acl create --allow-principal User:alice --operation write --topic orders` lets alice
    produce to orders. Creating an ACL needs ALTER on the cluster (the super user has it).
    """
    who = _who(allow_principal, deny_principal, allow_host, deny_host)
    resources = aclbindings.resources(topic or [], group or [], cluster, transactional_id or [])
    if not (who.allow or who.deny) or not operation or not resources:
        raise KctlError(
            "give a principal (--allow-principal or --deny-principal), an --operation and "
            "a resource (--topic, --group, --cluster or --transactional-id)",
            ExitCode.USAGE,
        )
    bindings = aclbindings.new_bindings(
        resources,
        aclbindings.pattern_type(pattern, ("literal", "prefixed")),
        who,
        [
            aclbindings.operation(op, tuple(o for o in aclbindings.OPERATIONS if o != "any"))
            for op in operation
        ],
    )
    acl_requests.create(checked(connect(options)), bindings)
    _print(bindings, json_output=False)
    console.info(f"Created {len(bindings)} ACL(s).")


@app.command("list")
@connection_options()
def list_acls(
    principal: Principal = None,
    allow_principal: AllowPrincipal = None,
    deny_principal: DenyPrincipal = None,
    allow_host: AllowHost = None,
    deny_host: DenyHost = None,
    operation: Operation = None,
    topic: Topic = None,
    group: Group = None,
    cluster: Cluster = False,
    transactional_id: TransactionalId = None,
    pattern: PatternFilter = "any",
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """List ACLs: all, or those matching the options (each option narrows the list)."""
    _print(_matching(acl_requests.describe, locals()), json_output)


@app.command()
@connection_options()
def delete(
    principal: Principal = None,
    allow_principal: AllowPrincipal = None,
    deny_principal: DenyPrincipal = None,
    allow_host: AllowHost = None,
    deny_host: DenyHost = None,
    operation: Operation = None,
    topic: Topic = None,
    group: Group = None,
    cluster: Cluster = False,
    transactional_id: TransactionalId = None,
    pattern: PatternFilter = "any",
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Delete the ACLs matching the options and print them; at least a principal or a
    resource must be given, so no typo deletes every ACL."""
    if not (principal or allow_principal or deny_principal or topic or group or cluster or transactional_id):
        raise KctlError("give a principal or a resource of the ACLs to delete", ExitCode.USAGE)
    deleted = _matching(acl_requests.delete, locals())
    _print(deleted, json_output)
    if not json_output:
        console.info(f"Deleted {len(deleted)} ACL(s).")


def _matching(action: Callable[[Connection, list], list[AclBinding]], options: dict) -> list[AclBinding]:
    """`action` (list or delete) on the ACLs that list's and delete's common options select."""
    o = SimpleNamespace(**options)
    on = aclbindings.resources(o.topic or [], o.group or [], o.cluster, o.transactional_id or [])
    who = _who(o.allow_principal, o.deny_principal, o.allow_host, o.deny_host, o.principal)
    acl_filters = aclbindings.filters(
        on, aclbindings.pattern_type(o.pattern), who, [aclbindings.operation(op) for op in o.operation or []]
    )
    return action(checked(connect(o.options)), acl_filters)


def _print(bindings: list[AclBinding], json_output: bool) -> None:
    if json_output:
        console.print_json([b.to_json() for b in bindings])
    else:
        console.print_table(aclbindings.COLUMNS, [aclbindings.row(b) for b in bindings])


@app.command()
@connection_options()
def explain(
    principal: Annotated[
        str,
        typer.Option("--principal", metavar="PRINCIPAL", show_default=False, help="Who asks, e.g. User:bob."),
    ],
    operation: Annotated[
        str,
        typer.Option(
            "--operation",
            metavar="OP",
            show_default=False,
            help="What it asks to do: read, write, create, delete, alter, describe, cluster-action, "
            "describe-configs, alter-configs or idempotent-write.",
        ),
    ],
    topic: Annotated[str | None, typer.Option("--topic", metavar="TOPIC", show_default=False)] = None,
    group: Annotated[str | None, typer.Option("--group", metavar="GROUP", show_default=False)] = None,
    cluster: Cluster = False,
    transactional_id: Annotated[
        str | None, typer.Option("--transactional-id", metavar="ID", show_default=False)
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="HOST",
            help="The client's address (a local cluster's clients connect from 127.0.0.1).",
        ),
    ] = "127.0.0.1",
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Say whether a principal may perform an operation on a resource, and which rule decides.

    The rules, in the StandardAuthorizer's order: a super user (super.users) may do anything;
    a matching DENY denies; a matching ALLOW allows (ALLOW of read, write, delete or alter also
    allows describe, ALLOW of alter-configs allows describe-configs); with no ACL at all on the
    resource, allow.everyone.if.no.acl.found decides (default false: deny); ACLs on the resource
    that do not match deny. An ACL matches the principal or User:*, the host or *. Exits 0
    either way: the answer is the output.
    """
    named = aclbindings.resources(
        [topic] if topic else [],
        [group] if group else [],
        cluster,
        [transactional_id] if transactional_id else [],
    )
    if len(named) != 1:
        raise KctlError(
            "give exactly one resource: --topic, --group, --cluster or --transactional-id", ExitCode.USAGE
        )
    op = aclbindings.operation(operation, tuple(o for o in aclbindings.OPERATIONS if o not in ("any", "all")))
    conn = checked(connect(options))
    found = aclexplain.explain(conn, aclbindings.principal(principal), host, op, named[0])
    if json_output:
        console.print_json(found.to_json())
        return
    print("\n".join(found.lines()), flush=True)
    if found.acls:
        console.print_table(
            aclbindings.COLUMNS, [aclbindings.row(b) for b in found.acls], title=f"ACLS ON {found.resource}"
        )

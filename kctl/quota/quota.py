"""`kctl quota alter|describe`: client quotas (producer_byte_rate, consumer_byte_rate, ...)
of users and client ids, as kafka-configs.sh --entity-type users/clients and rpk cluster
quotas manage them."""

from __future__ import annotations

from typing import Annotated

import typer

from kctl.kafka import quotas
from kctl.kafka.client import checked, connect
from kctl.shell import console
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.keyvalue import parse_pairs
from kctl.shell.options import Json

app = typer.Typer(
    help="Alter and describe client quotas (KIP-13, KIP-55): byte rates per user, per client id "
    "or per user and client id, or for their `<default>`. A client over its rate gets "
    "throttle_time_ms in its Produce or Fetch answers and its connection waits that long. "
    "A client takes the first quota found in Kafka's order: /users/U/clients/C, "
    "/users/U/clients/<default>, /users/U, /users/<default>/clients/C, "
    "/users/<default>/clients/<default>, /users/<default>, /clients/C, /clients/<default>.",
    no_args_is_help=True,
)

UserOpt = Annotated[
    str | None,
    typer.Option(
        "--user", metavar="USER", show_default=False, help="The user (principal name) of the entity."
    ),
]
UserDefault = Annotated[
    bool, typer.Option("--user-default", help="The <default> user: every user without a quota of its own.")
]
ClientOpt = Annotated[
    str | None,
    typer.Option("--client-id", metavar="ID", show_default=False, help="The client id of the entity."),
]
ClientDefault = Annotated[
    bool,
    typer.Option(
        "--client-id-default", help="The <default> client id: every client id without a quota of its own."
    ),
]


def _entity(user, user_default, client_id, client_default) -> dict[str, str | None]:
    entity: dict[str, str | None] = {}
    for key, name, default, option in (
        ("user", user, user_default, "--user"),
        ("client-id", client_id, client_default, "--client-id"),
    ):
        if name is not None and default:
            raise KctlError(f"give {option} or {option}-default, not both", ExitCode.USAGE)
        if name is not None or default:
            entity[key] = name
    return entity


def _values(items: list[str] | None) -> dict[str, float]:
    values = {}
    for key, value in parse_pairs([p for item in items or [] for p in item.split(",") if p], "--add"):
        try:
            values[key] = float(value)
        except ValueError:
            raise KctlError(
                f"invalid --add {key}={value}: the value must be a number", ExitCode.INVALID_INPUT
            ) from None
    return values


@app.command()
@connection_options()
def alter(
    user: UserOpt = None,
    user_default: UserDefault = False,
    client_id: ClientOpt = None,
    client_id_default: ClientDefault = False,
    add: Annotated[
        list[str] | None,
        typer.Option(
            "--add",
            metavar="KEY=VALUE[,KEY=VALUE]",
            show_default=False,
            help="Set quotas (repeatable): producer_byte_rate, consumer_byte_rate (bytes per "
            "second), request_percentage, controller_mutation_rate.",
        ),
    ] = None,
    delete: Annotated[
        list[str] | None,
        typer.Option(
            "--delete",
            metavar="KEY[,KEY]",
            show_default=False,
            help="Remove quotas (repeatable): the entity falls back to the next one in precedence.",
        ),
    ] = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Set or remove the quotas of one entity: a user, a client id, or both (kafka-configs.sh
    --alter --entity-type users/clients)."""
    entity = _entity(user, user_default, client_id, client_id_default)
    if not entity:
        raise KctlError("give --user, --user-default, --client-id or --client-id-default", ExitCode.USAGE)
    values = _values(add)
    removed = [k for item in delete or [] for k in item.split(",") if k]
    if not values and not removed:
        raise KctlError("give --add KEY=VALUE or --delete KEY", ExitCode.USAGE)
    conn = checked(connect(options))
    quotas.alter(conn, entity, values, removed)
    console.info(f"Completed updating quotas of {quotas.entity_name(entity)}.")


@app.command()
@connection_options()
def describe(
    user: UserOpt = None,
    user_default: UserDefault = False,
    client_id: ClientOpt = None,
    client_id_default: ClientDefault = False,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """Show the quotas set on entities: every one, or those naming this user and/or client
    id (or their <default>), as kafka-configs.sh --describe does."""
    _entity(user, user_default, client_id, client_id_default)  # refuses conflicting options
    conn = checked(connect(options))
    rows = quotas.describe(conn, user, user_default, client_id, client_id_default)
    if json_output:
        console.print_json(rows)
        return
    console.print_table(
        ["user", "client-id", "quotas"],
        [
            [
                r.get("user", "-"),
                r.get("client_id", "-"),
                ", ".join(f"{k}={v}" for k, v in r["values"].items()),
            ]
            for r in rows
        ],
    )

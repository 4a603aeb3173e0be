"""`kctl user create|list|delete`: SCRAM users, as kafka-configs.sh --entity-type users and
rpk security user manage them."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from kctl.kafka import scram
from kctl.kafka.client import checked, connect
from kctl.shell import console
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import Json

app = typer.Typer(
    help="Create, list and delete SASL/SCRAM users (KIP-554). A user logs in with SCRAM-SHA-256 "
    "or SCRAM-SHA-512 when it has a credential for that mechanism (and with PLAIN on brokerd, "
    "which checks PLAIN passwords against the SCRAM credentials); what it may do is up to "
    "ACLs (`kctl acl`).",
    no_args_is_help=True,
)


class Mechanism(str, Enum):
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"


User = Annotated[
    str, typer.Argument(metavar="NAME", help="User name; its principal is User:NAME.", show_default=False)
]


@app.command()
@connection_options()
def create(
    user: User,
    password: Annotated[
        str | None,
        typer.Option(
            "--password",
            metavar="PASSWORD",
            show_default=False,
            help="The password (visible to other users of this machine in the process list: "
            "prefer --password-stdin or the prompt).",
        ),
    ] = None,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from the first line of stdin.")
    ] = False,
    mechanism: Annotated[
        Mechanism,
        typer.Option("--mechanism", "-m", case_sensitive=False, help="SCRAM mechanism of the credential."),
    ] = Mechanism.SCRAM_SHA_512,
    iterations: Annotated[
        int, typer.Option("--iterations", metavar="N", help="PBKDF2 iterations; Kafka accepts 4096 to 16384.")
    ] = scram.DEFAULT_ITERATIONS,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Create a user, or set a new password for an existing one (for this mechanism).

    Without --password or --password-stdin the password is asked for twice on a terminal.
    The client salts and hashes it: the cluster only ever stores the salted keys.
    """
    secret = read_password(password, password_stdin)
    conn = checked(connect(options))
    scram.upsert(conn, user, secret, mechanism.value, iterations)
    console.info(f"User {user}: {mechanism.value} credential set ({iterations} iterations).")


def read_password(password: str | None, from_stdin: bool) -> str:
    """The password from the option, stdin, or a hidden prompt asked twice on a terminal."""
    if password is not None and from_stdin:
        raise KctlError("give --password or --password-stdin, not both", ExitCode.USAGE)
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    elif password is None:
        if not sys.stdin.isatty():
            raise KctlError(
                "no password: give --password-stdin (or --password), or run on a terminal to be asked",
                ExitCode.USAGE,
            )
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True, err=True)
    if not password:
        raise KctlError("the password is empty", ExitCode.INVALID_INPUT)
    return password


@app.command("list")
@connection_options()
def list_users(
    users: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[NAME]...", show_default=False, help="Only these users (an unknown one is exit 4)."
        ),
    ] = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
    json_output: Json = False,
) -> None:
    """List SCRAM users with the mechanisms they have credentials for and their iterations."""
    conn = checked(connect(options))
    found = scram.describe(conn, users)
    if json_output:
        console.print_json(found)
        return
    console.print_table(
        ["user", "mechanism", "iterations"],
        [[u["user"], c["mechanism"], c["iterations"]] for u in found for c in u["credentials"]],
    )


@app.command()
@connection_options()
def delete(
    user: User,
    mechanism: Annotated[
        list[Mechanism] | None,
        typer.Option(
            "--mechanism",
            "-m",
            case_sensitive=False,
            show_default=False,
            help="Delete only this mechanism's credential (repeatable). Default: every one.",
        ),
    ] = None,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    """Delete a user's SCRAM credentials: it can no longer log in (its ACLs stay)."""
    conn = checked(connect(options))
    deleted = scram.delete(conn, user, [m.value for m in mechanism or []])
    console.info(f"User {user}: {', '.join(deleted)} credential(s) deleted.")

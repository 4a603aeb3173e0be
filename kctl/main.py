"""The `kctl` command tree: Typer app, global options and the error boundary.

The tree is declared in COMMANDS without importing the command modules: a command's module
is imported when the command runs (or its own --help is asked for), so `kctl --help`, TAB
completion and a short command do not pay for every other command's clients (librdkafka,
kafka-python, PySpark, matplotlib, cryptography, brokerd). A listing of the commands (the
root --help, completion) shows the help kept in the table; tests/kctl/test_lazy_commands.py
checks that it is each command's own.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Final

import typer
from typer.core import TyperCommand, TyperGroup

from kctl.shell.errors import KctlError, discard_stdout
from kctl.shell.exit_codes import ExitCode, table

EPILOG = "**Exit codes**\n\n" + "\n".join(f"* {code}: {meaning}" for code, meaning in table())
MARKUP_MODE: Final = "markdown"
Command = TyperCommand | TyperGroup
_LISTING = "kctl.listing"  # ctx.meta key: only the commands' names and help are wanted


@dataclass(frozen=True)
class CommandEntry:
    """Where a top-level command is defined, and what a listing of the commands shows of it."""

    module: str
    attribute: str  # a typer.Typer (a command group) or a command function
    help: str = ""  # the first paragraph of the command's help, when it has no short help
    short_help: str | None = None

    def load(self, name: str) -> Command:
        """The command as `app.add_typer` / `app.command` would have made it: imports its module."""
        target = getattr(importlib.import_module(self.module), self.attribute)
        holder = typer.Typer(rich_markup_mode=MARKUP_MODE)
        if isinstance(target, typer.Typer):
            holder.add_typer(target, name=name)
        else:
            holder.command(name=name)(target)
        command = typer.main.get_group(holder).commands[name]
        assert isinstance(command, Command)  # Typer makes every command one of these
        return command

    def summary(self, name: str) -> Command:
        """A stand-in that lists like the command (name and help) without importing it."""
        return TyperCommand(name=name, help=self.help, short_help=self.short_help)


# In the order Typer lists them: commands first, then command groups.
COMMANDS: dict[str, CommandEntry] = {
    "produce": CommandEntry(
        "kctl.produce.produce",
        "produce",
        "Produce one record per line of stdin (or --file); the input is read as raw bytes.",
    ),
    "consume": CommandEntry(
        "kctl.consume.consume",
        "consume",
        "Print records of a topic; follows new records like `tail -f` unless -e, -n or a range ends it.",
    ),
    "watch": CommandEntry(
        "kctl.watch.watch",
        "watch",
        "Watch brokers, partitions and consumer groups change while you break things.",
    ),
    "report": CommandEntry(
        "kctl.report.report", "report", "Draw a `kctl watch --record` file as a timeline to put on a slide."
    ),
    "sql": CommandEntry(
        "kctl.sql.sql",
        "sql",
        "Run Spark SQL over topics: print the result, or write it to a topic with --to.",
    ),
    "cluster": CommandEntry(
        "kctl.cluster.cluster",
        "app",
        short_help="Start, stop and inspect the local cluster (brokerd daemons).",
    ),
    "broker": CommandEntry(
        "kctl.cluster.broker",
        "app",
        "List the local cluster's brokers and inject faults: kill, stop, start, pause, resume, "
        "throttle, isolate, heal, netem.",
    ),
    "topic": CommandEntry("kctl.topic.topic", "app", "Create, list, describe, delete and configure topics."),
    "group": CommandEntry("kctl.group.group", "app", "List, describe, reset and delete consumer groups."),
    "user": CommandEntry(
        "kctl.user.user",
        "app",
        "Create, list and delete SASL/SCRAM users (KIP-554). A user logs in with SCRAM-SHA-256 or"
        " SCRAM-SHA-512 when it has a credential for that mechanism (and with PLAIN on brokerd, "
        "which checks PLAIN passwords against the SCRAM credentials); what it may do is up to "
        "ACLs (`kctl acl`).",
    ),
    "acl": CommandEntry(
        "kctl.acl.acl",
        "app",
        "Create, list, delete and explain ACLs (KIP-11; prefixed patterns, KIP-290). A request is"
        " allowed when its principal is a super user, or an ALLOW binding matches and no DENY "
        "does; see `kctl acl explain` and docs/security.md.",
    ),
    "quota": CommandEntry(
        "kctl.quota.quota",
        "app",
        "Alter and describe client quotas (KIP-13, KIP-55): byte rates per user, per client id or"
        " per user and client id, or for their `<default>`. A client over its rate gets "
        "throttle_time_ms in its Produce or Fetch answers and its connection waits that long. A "
        "client takes the first quota found in Kafka's order: /users/U/clients/C, "
        "/users/U/clients/<default>, /users/U, /users/<default>/clients/C, "
        "/users/<default>/clients/<default>, /users/<default>, /clients/C, /clients/<default>.",
    ),
    "schema": CommandEntry(
        "kctl.schema.schema",
        "app",
        "Register, list, show, check and delete schemas in the schema registry (Confluent's REST"
        " API). Producers and consumers agree on a record format through it: a subject "
        "(`TOPIC-value`, `TOPIC-key`) holds versions of a schema, and each new version must be "
        "compatible with the earlier ones as the subject's level says (BACKWARD by default).",
    ),
    "rest-proxy": CommandEntry(
        "kctl.restproxy.restproxy",
        "app",
        "Start, stop and show a REST proxy: Confluent's REST Proxy API (v2 and v3) in front of a "
        "Kafka cluster, so curl, browsers and any HTTP client produce and consume. `kctl cluster up` "
        "starts one for the local cluster; `kctl rest-proxy up -b HOST:PORT` serves another cluster. "
        "Its files are in DIR/rest-proxy/. See docs/rest-proxy.md.",
    ),
    "connect": CommandEntry(
        "kctl.connect.connect",
        "app",
        "Move data in and out of topics with Kafka Connect's connectors (FileStream, JDBC on "
        "SQLite and PostgreSQL, MirrorMaker 2), run by a connect worker beside the cluster: "
        "`kctl connect up` starts it (one Spark application, a Structured Streaming query per "
        "connector) and the other commands are clients of its REST API, which is Kafka Connect's. "
        "See docs/connect.md.",
    ),
    "bench": CommandEntry("kctl.bench.bench", "app", "Measure produce and consume throughput and latency."),
    "verify": CommandEntry(
        "kctl.verify.verify",
        "app",
        short_help="Check Kafka's guarantees under faults, Jepsen-style (history, checker, verdict).",
    ),
    "learn": CommandEntry(
        "kctl.learn.learn", "app", short_help="Guided lessons on real brokers (list, run)."
    ),
}


class KctlGroup(TyperGroup):
    """The root command: loads each command on first use, and is the one place where expected
    failures become a single stderr line and an exit code."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The summaries stand in for the commands wherever Typer reads `commands` itself (the
        # order of listings, "Did you mean" suggestions); get_command loads the real one.
        self.commands.update({name: entry.summary(name) for name, entry in COMMANDS.items()})

    # typer vendors Click and exports no name for the Context and HelpFormatter these methods
    # take; typer.Context, a subclass that adds nothing, stands for the first, Any for the other.
    def get_command(self, ctx: typer.Context, cmd_name: str) -> Command | None:  # type: ignore[override]
        entry = COMMANDS.get(cmd_name)
        if entry is None or ctx.meta.get(_LISTING):
            command = super().get_command(ctx, cmd_name)
            return command if isinstance(command, Command) else None
        return entry.load(cmd_name)

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:  # type: ignore[override]
        with _listing(ctx):
            super().format_help(ctx, formatter)

    def shell_complete(self, ctx: typer.Context, incomplete: str) -> list[Any]:  # type: ignore[override]
        with _listing(ctx):
            return super().shell_complete(ctx, incomplete)

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except KctlError as exc:
            from kctl.shell import console

            console.error(exc.message)
            ctx.exit(exc.code)
        except BrokenPipeError:
            discard_stdout()
            ctx.exit(ExitCode.BROKEN_PIPE)


@contextmanager
def _listing(ctx: typer.Context) -> Iterator[None]:
    """While the commands are only listed, get_command answers with their summaries."""
    ctx.meta[_LISTING] = True
    try:
        yield
    finally:
        del ctx.meta[_LISTING]


app = typer.Typer(
    name="kctl",
    cls=KctlGroup,
    short_help="a Kafka you can run, read and break locally",
    help="A Kafka you can run, read and break locally: start a cluster, create topics, "
    "produce and consume from shell pipes, see leaders, ISR and high-water marks.",
    epilog=EPILOG,
    no_args_is_help=True,
    rich_markup_mode=MARKUP_MODE,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version as package_version

        typer.echo(f"kctl {package_version('kctl')}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    # Global options only: each command carries its own connection options (kctl.shell.options),
    # so they can follow the command name as with kcat and rpk.
    return None

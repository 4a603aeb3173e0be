"""The `kctl` command tree: Typer app, global options and the error boundary."""

from __future__ import annotations

import os
import sys
from importlib.metadata import version as package_version
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from kctl.acl import acl
from kctl.bench import bench
from kctl.cluster import broker, cluster
from kctl.consume import consume
from kctl.group import group
from kctl.learn import learn
from kctl.produce import produce
from kctl.quota import quota
from kctl.report import report
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode, table
from kctl.sql import sql
from kctl.topic import topic
from kctl.user import user
from kctl.verify import verify
from kctl.watch import watch

EPILOG = "**Exit codes**\n\n" + "\n".join(f"* {code}: {meaning}" for code, meaning in table())


class KctlGroup(TyperGroup):
    """The one place where expected failures become a single stderr line and an exit code."""

    # typer vendors Click and exports no name for the Context TyperGroup.invoke takes;
    # typer.Context, a subclass that adds nothing, stands for it.
    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except KctlError as exc:
            console.error(exc.message)
            ctx.exit(exc.code)
        except BrokenPipeError:
            _discard_stdout()
            ctx.exit(ExitCode.BROKEN_PIPE)


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


app = typer.Typer(
    name="kctl",
    cls=KctlGroup,
    short_help="a Kafka you can run, read and break locally",
    help="A Kafka you can run, read and break locally: start a cluster, create topics, "
    "produce and consume from shell pipes, see leaders, ISR and high-water marks.",
    epilog=EPILOG,
    no_args_is_help=True,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(cluster.app, name="cluster")
app.add_typer(broker.app, name="broker")
app.add_typer(topic.app, name="topic")
app.add_typer(group.app, name="group")
app.add_typer(user.app, name="user")
app.add_typer(acl.app, name="acl")
app.add_typer(quota.app, name="quota")
app.command(name="produce")(produce.produce)
app.command(name="consume")(consume.consume)
app.command(name="watch")(watch.watch)
app.command(name="report")(report.report)
app.add_typer(bench.app, name="bench")
app.command(name="sql")(sql.sql)
app.add_typer(verify.app, name="verify")
app.add_typer(learn.app, name="learn")


def _print_version(value: bool) -> None:
    if value:
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

"""`kctl cluster up|down|status`: the local cluster's daemons."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from brokerd.state import ClusterState
from rich.text import Text

from kctl import console, localcluster
from kctl.bootstrap import resolve_cluster_dir
from kctl.errors import KctlError
from kctl.exit_codes import ExitCode
from kctl.localcluster import BrokerView
from kctl.options import ClusterDir, Json

app = typer.Typer(
    help="Start, stop and inspect the local cluster (brokerd daemons).\n\n"
         "Its directory (--dir, else $KCTL_HOME, else ~/.kctl) holds state/, the shared cluster "
         "state, and brokers/ID/ with each broker's data/ and broker.log.",
    short_help="Start, stop and inspect the local cluster (brokerd daemons).",
    no_args_is_help=True)


@app.command()
def up(
    brokers: Annotated[Optional[int], typer.Option(
        "--brokers", "-n", min=1, show_default=False,
        help=f"Number of brokers of a new cluster [default: {localcluster.DEFAULT_BROKERS}]. "
             "An existing cluster keeps its own.")] = None,
    port_base: Annotated[Optional[int], typer.Option(
        "--port-base", min=1, max=65535, show_default=False,
        help="First broker port; brokers get P, P+1, ... Default: free ports (new cluster) "
             "or the cluster's own ports.")] = None,
    cluster_dir: ClusterDir = None,
    json_output: Json = False,
) -> None:
    """Start the local cluster's brokers in the background and wait until they answer.

    On an existing directory this restarts its brokers with their data and ports; a cluster
    that is already running is left alone.
    """
    state = ClusterState(resolve_cluster_dir(cluster_dir))
    ports = localcluster.plan(state, brokers, port_base)
    cluster_id = state.initialize(ports)
    already = {b.id for b in localcluster.view(state) if b.state == "alive"}
    for broker_id, port in ports.items():
        if broker_id not in already:
            localcluster.ensure_port_free(port, broker_id)
    procs = {i: localcluster.start(state, i, p) for i, p in ports.items() if i not in already}
    localcluster.wait_ready(state, procs)
    views = localcluster.view(state)
    for broker in views:
        broker.state = "started" if broker.id in procs else "already running"
    bootstrap = ",".join(b.address for b in views)
    if json_output:
        console.print_json({"cluster_id": cluster_id, "dir": str(state.cluster_dir),
                            "bootstrap": bootstrap, "brokers": [_broker_json(b) for b in views]})
    else:
        _print_brokers(views, controller=None)
        print(f"export KCTL_BOOTSTRAP={bootstrap}", flush=True)
    _hint_next(state.cluster_dir, cluster_dir is not None, started=bool(procs))


def _hint_next(directory: Path, explicit_dir: bool, started: bool) -> None:
    where = f" --dir {directory}" if explicit_dir else ""
    console.info(f"Cluster {'started' if started else 'already running'} in {directory}.")
    console.info("Next: kctl topic create demo -p 3; seq 10 | kctl produce demo; "
                 f"kctl consume demo -e; kctl topic describe demo; kctl cluster status{where}")


@app.command()
def down(cluster_dir: ClusterDir = None, json_output: Json = False) -> None:
    """Stop every broker of the local cluster (SIGTERM, then SIGKILL after 10 s); data stays."""
    state = _existing(cluster_dir)
    outcome = localcluster.stop_all(state)
    if json_output:
        console.print_json({"brokers": [{"id": i, "result": r} for i, r in sorted(outcome.items())]})
    else:
        console.print_table(["id", "result"], sorted(outcome.items()))
    if any(r == "still running" for r in outcome.values()):
        raise KctlError("some brokers did not stop even after SIGKILL")


@app.command()
def status(cluster_dir: ClusterDir = None, json_output: Json = False) -> None:
    """Show brokers, pids, addresses, liveness and the controller; exit 10 when unhealthy."""
    state = _existing(cluster_dir)
    views = localcluster.view(state)
    controller = state.controller()
    problems = [f"broker {b.id} is down" for b in views if b.state != "alive"]
    live_ids = {b.id for b in views if b.state == "alive"}
    if controller is None or controller[0] not in live_ids:
        problems.append("no live controller")
    if json_output:
        console.print_json({
            "cluster_id": state.cluster_id(), "dir": str(state.cluster_dir),
            "healthy": not problems,
            "controller": None if controller is None else {"broker_id": controller[0], "epoch": controller[1]},
            "brokers": [_broker_json(b) for b in views],
        })
    else:
        _print_brokers(views, controller)
    if problems:
        raise KctlError("cluster unhealthy: " + ", ".join(problems), ExitCode.UNHEALTHY)


def _existing(cluster_dir: Path | None) -> ClusterState:
    state = ClusterState(resolve_cluster_dir(cluster_dir))
    if not state.exists():
        raise KctlError(f"no cluster in {state.cluster_dir}: start one with `kctl cluster up`",
                        ExitCode.UNREACHABLE)
    return state


def _print_brokers(views: list[BrokerView], controller: tuple[int, int] | None) -> None:
    """The broker table; the controller is marked with '*', as in `rpk cluster info`."""
    title = None
    if controller is not None:
        title = f"controller: broker {controller[0]} (epoch {controller[1]})"
    rows = []
    for b in views:
        marker = "*" if controller is not None and b.id == controller[0] else ""
        style = "green" if b.state in ("alive", "started", "already running") else "bold red"
        rows.append([f"{b.id}{marker}", b.address, b.pid, Text(b.state, style=style)])
    console.print_table(["id", "address", "pid", "state"], rows, title=title)


def _broker_json(b: BrokerView) -> dict:
    return {"id": b.id, "host": b.host, "port": b.port, "pid": b.pid, "state": b.state}

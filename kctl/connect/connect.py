"""`kctl connect up|down|create|list|status|describe|pause|resume|restart|stop|delete|plugins`: a
Kafka Connect worker beside the cluster (one Spark application, a Structured Streaming query
per connector) and a client of its REST API, which is Kafka Connect's."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kctl.cluster import localservice
from kctl.connect import status as connectorstatus
from kctl.connect.client import CONNECT, ConnectClient, connector_path, worker_url
from kctl.connect.starting import started_task
from kctl.kafka import bootstrap as brokers
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import Bootstrap, ClusterDir, CommandConfig, Json

app = typer.Typer(
    help="Move data in and out of topics with Kafka Connect's connectors (FileStream, JDBC on "
    "SQLite and PostgreSQL, MirrorMaker 2), run by a connect worker beside the cluster: "
    "`kctl connect up` starts it (one Spark application, a Structured Streaming query per "
    "connector) and the other commands are clients of its REST API, which is Kafka Connect's. "
    "See docs/connect.md.",
    no_args_is_help=True,
)

Url = Annotated[
    str | None,
    typer.Option(
        "--url",
        metavar="URL",
        show_default=False,
        help=f"The connect worker's URL. Default: ${CONNECT.url_env}, else the local cluster's worker.",
    ),
]
Name = Annotated[str, typer.Argument(metavar="NAME", help="The connector's name.", show_default=False)]


def _client(url: str | None, cluster_dir: Path | None) -> ConnectClient:
    return ConnectClient(worker_url(url, brokers.resolve_cluster_dir(cluster_dir)))


@app.command()
def up(
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            show_default=False,
            help="Port of its REST API [default: the one it had, else a free one].",
        ),
    ] = None,
    master: Annotated[
        str,
        typer.Option("--master", metavar="URL", help="The Spark master: local[N] or spark://HOST:PORT."),
    ] = "local[*]",
    worker_config: Annotated[
        list[str] | None,
        typer.Option(
            "--worker-config",
            "-o",
            metavar="NAME=VALUE",
            show_default=False,
            help="A worker setting with Kafka Connect's name, e.g. -o config.storage.topic=my-configs "
            "(repeatable): group.id, config.storage.topic, status.storage.topic, key.converter, "
            "value.converter, value.converter.schemas.enable.",
        ),
    ] = None,
    bootstrap: Bootstrap = None,
    cluster_dir: ClusterDir = None,
    command_config: CommandConfig = None,
    json_output: Json = False,
) -> None:
    """Start the connect worker in the background (unless it runs), wait until it has read its
    connectors from the cluster (exit 3 when it cannot reach it), and print its URL as
    KCTL_CONNECT_URL. Connectors created before start again where they stopped. Its files
    are in DIR/connect/: its log and each connector's Spark checkpoint."""
    directory = brokers.resolve_cluster_dir(cluster_dir)
    found = brokers.resolve_bootstrap(bootstrap, directory)
    extra = ["--dir", str(localservice.directory(directory, CONNECT)), "--master", master]
    for setting in worker_config or []:
        if "=" not in setting:
            raise KctlError(f"--worker-config {setting!r} is not NAME=VALUE", ExitCode.USAGE)
        extra += ["--worker-config", setting]
    starting = localservice.start(
        directory,
        CONNECT,
        found.servers,
        _settings(found, command_config),
        extra_args=tuple(extra),
        port=port,
    )
    started = starting.serving(found.servers)
    if json_output:
        console.print_json({"url": started.url, "pid": started.pid or None})
    else:
        print(f"export {CONNECT.url_env}={started.url}", flush=True)


def _settings(found: brokers.Bootstrap, command_config: Path | None) -> Path | None:
    """-F, else the local cluster's service login (its super user's settings when secured),
    which the worker's clients use."""
    from kctl.cluster import brokerconfig, securecluster
    from kctl.kafka.clientprops import is_local

    if command_config is not None or not is_local(found):
        return command_config
    protocol = brokerconfig.security_protocol(found.cluster_dir)
    return securecluster.service_login(found.cluster_dir, protocol)[0]


@app.command()
def down(cluster_dir: ClusterDir = None) -> None:
    """Stop the connect worker (SIGTERM, then SIGKILL after 10 s); its connectors start again
    with it."""
    outcome = localservice.stop(brokers.resolve_cluster_dir(cluster_dir), CONNECT)
    console.info(f"connect worker: {outcome}")
    if outcome == "still running":
        raise KctlError("the connect worker did not stop even after SIGKILL")


@app.command()
def create(
    config_file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            show_default=False,
            help='A JSON connector config as Connect\'s REST API takes it: {"name": ..., "config": '
            "{...}}, or the config alone with its name in it; - reads stdin.",
        ),
    ],
    wait: Annotated[
        bool,
        typer.Option(
            "--wait/--no-wait",
            help="Wait until the connector's task runs (or fails, saying why).",
        ),
    ] = True,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="How long --wait waits for the task (the worker's first connector starts Spark).",
        ),
    ] = 120.0,
    url: Url = None,
    cluster_dir: ClusterDir = None,
    json_output: Json = False,
) -> None:
    """Create a connector (POST /connectors) and wait until its task runs. A config Connect
    refuses exits 5 with Connect's message; a task that cannot reach its database or cluster
    exits 3 with the reason, one that fails otherwise exits 1 (the connector stays, FAILED:
    fix it with `kctl connect delete`, or PUT a new config)."""
    text = sys.stdin.read() if str(config_file) == "-" else _read(config_file)
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise KctlError(f"{config_file} is not JSON: {exc}", ExitCode.INVALID_INPUT) from None
    if not isinstance(document, dict):
        raise KctlError(f"{config_file} is not a JSON object", ExitCode.INVALID_INPUT)
    if not isinstance(document.get("config"), dict):  # a bare config
        document = {"name": document.get("name"), "config": document}
    client = _client(url, cluster_dir)
    created = client.call("POST", "/connectors", document)
    runs = wait and document.get("initial_state", "RUNNING") == "RUNNING"
    task = started_task(client, created["name"], timeout) if runs else None
    if json_output:
        console.print_json(created)
    else:
        state = f": task 0 {task['state']}" if task else ""
        console.info(f"Created connector {created['name']} ({created['type']}){state}.")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise KctlError(f"cannot read {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None


@app.command("list")
def list_connectors(url: Url = None, cluster_dir: ClusterDir = None, json_output: Json = False) -> None:
    """List the connectors with their type, state and their tasks' states."""
    found: dict[str, Any] = _client(url, cluster_dir).get("/connectors?expand=status")
    if json_output:
        console.print_json(found)
        return
    rows = [
        (
            name,
            entry["status"]["type"],
            entry["status"]["connector"]["state"],
            ",".join(task["state"] for task in entry["status"]["tasks"]) or "-",
        )
        for name, entry in sorted(found.items())
    ]
    console.print_table(["name", "type", "state", "tasks"], rows)


@app.command()
def status(
    name: Annotated[
        str | None,
        typer.Argument(metavar="[NAME]", help="Only this connector. Default: every one.", show_default=False),
    ] = None,
    url: Url = None,
    cluster_dir: ClusterDir = None,
    json_output: Json = False,
) -> None:
    """Show each connector's state, its tasks' states, the records its task read and wrote,
    its errors and dead letters since the worker started, its lag (a sink's records not yet
    committed, FileStreamSource's bytes not yet read, a JDBC source's rows not yet moved, a
    mirror's records not yet copied) and its last error."""
    found = connectorstatus.fetch(_client(url, cluster_dir), name)
    if json_output:
        console.print_json(found)
        return
    console.print_section(connectorstatus.section(found))


@app.command()
def describe(name: Name, url: Url = None, cluster_dir: ClusterDir = None, json_output: Json = False) -> None:
    """Show a connector: its config, status (a failed task's error included) and offsets."""
    client = _client(url, cluster_dir)
    info = client.get(connector_path(name))
    status = client.get(connector_path(name, "status"))
    offsets = client.get(connector_path(name, "offsets"))["offsets"]
    if json_output:
        console.print_json({"info": info, "status": status, "offsets": offsets})
        return
    print(f"{name}: {status['type']} connector, {status['connector']['state']}")
    for task in status["tasks"]:
        print(f"task {task['id']}: {task['state']} on {task['worker_id']}")
        if task.get("trace"):
            print(task["trace"].rstrip())
    console.print_table(["config", "value"], sorted(info["config"].items()))
    for offset in offsets:
        print(f"offset: {json.dumps(offset['partition'])} {json.dumps(offset['offset'])}")


def _change(method: str, action: str, done: str) -> Any:
    def command(name: Name, url: Url = None, cluster_dir: ClusterDir = None) -> None:
        _client(url, cluster_dir).call(method, connector_path(name, *([action] if action else [])))
        console.info(f"Connector {name} {done}.")

    return command


app.command("pause", help="Pause a connector: its query stops until `resume`.")(
    _change("PUT", "pause", "paused")
)
app.command("resume", help="Resume a paused or stopped connector where it stopped.")(
    _change("PUT", "resume", "resumed")
)
app.command("stop", help="Stop a connector and its tasks (KIP-875); `resume` starts it again.")(
    _change("PUT", "stop", "stopped")
)
app.command("delete", help="Delete a connector and its progress (its Spark checkpoint).")(
    _change("DELETE", "", "deleted")
)


@app.command()
def restart(
    name: Name,
    only_failed: Annotated[
        bool, typer.Option("--only-failed", help="Restart its task only if it failed (onlyFailed=true).")
    ] = False,
    url: Url = None,
    cluster_dir: ClusterDir = None,
) -> None:
    """Restart a connector and its task (POST .../restart?includeTasks=true), from where its
    last micro-batch ended."""
    query = f"?includeTasks=true&onlyFailed={str(only_failed).lower()}"
    status = _client(url, cluster_dir).call("POST", connector_path(name, "restart") + query)
    restarted = [str(t["id"]) for t in status["tasks"] if t["state"] == "RESTARTING"]
    console.info(f"Connector {name} restarting (tasks: {', '.join(restarted) or 'none'}).")


@app.command()
def plugins(url: Url = None, cluster_dir: ClusterDir = None, json_output: Json = False) -> None:
    """List the connector classes the worker runs (their short aliases work too)."""
    found = _client(url, cluster_dir).get("/connector-plugins")
    if json_output:
        console.print_json(found)
        return
    console.print_table(["class", "type", "version"], [(p["class"], p["type"], p["version"]) for p in found])

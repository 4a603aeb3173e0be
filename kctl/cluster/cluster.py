"""`kctl cluster up|down|status|metadata|add-broker|remove-broker`: the local cluster's daemons
and its metadata log."""

from __future__ import annotations

import json
import select
import sys
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from brokerd.security import client_properties
from brokerd.state.cluster_plan import planned_host
from kctl.cluster import (
    brokerconfig,
    brokerview,
    localcluster,
    localservice,
    netfaultcommands,
    netfaults,
    securecluster,
)
from kctl.cluster.securecluster import SecurityProtocol
from kctl.kafka.bootstrap import resolve_cluster_dir
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import ClusterDir, Json

if TYPE_CHECKING:
    pass

app = typer.Typer(
    help="Start, stop and inspect the local cluster (brokerd daemons).\n\n"
    "Its directory (--dir, else $KCTL_HOME, else ~/.kctl) holds state/, the shared cluster "
    "state with the metadata log (`cluster metadata` tells it), brokers/ID/ with each "
    "broker's data/ and broker.log, and kctl.json with the broker settings "
    "(`cluster up -o`) every broker of the cluster is started with.",
    short_help="Start, stop and inspect the local cluster (brokerd daemons).",
    no_args_is_help=True,
)


@app.command()
def up(
    brokers: Annotated[
        int | None,
        typer.Option(
            "--brokers",
            "-n",
            min=1,
            show_default=False,
            help=f"Number of brokers of a new cluster [default: {localcluster.DEFAULT_BROKERS}]. "
            "An existing cluster keeps its own.",
        ),
    ] = None,
    port_base: Annotated[
        int | None,
        typer.Option(
            "--port-base",
            min=1,
            max=65535,
            show_default=False,
            help="First broker port; brokers get P, P+1, ... Default: free ports (new cluster) "
            "or the cluster's own ports.",
        ),
    ] = None,
    broker_config: Annotated[
        list[str] | None,
        typer.Option(
            "--broker-config",
            "-o",
            metavar="NAME=VALUE",
            show_default=False,
            help="Broker setting with Kafka's name, passed to every broker and remembered for "
            "restarts, e.g. -o broker.session.timeout.ms=1000 (repeatable).",
        ),
    ] = None,
    security_protocol: Annotated[
        SecurityProtocol | None,
        typer.Option(
            "--security-protocol",
            show_default=False,
            help="Listeners of a new cluster [default: PLAINTEXT]. SASL_PLAINTEXT, SASL_SSL and SSL "
            "turn on authentication (SCRAM-SHA-256/512 and PLAIN with SASL, client certificates "
            "with SSL) and ACLs, make the super user admin and write its client settings to "
            "DIR/admin.properties, which kctl uses for this cluster. An existing cluster keeps its own.",
        ),
    ] = None,
    no_schema_registry: Annotated[
        bool,
        typer.Option(
            "--no-schema-registry",
            help="Do not start the cluster's schema registry (started by default beside the brokers).",
        ),
    ] = False,
    no_rest_proxy: Annotated[
        bool,
        typer.Option(
            "--no-rest-proxy",
            help="Do not start the cluster's REST proxy (started by default beside the brokers).",
        ),
    ] = False,
    cluster_dir: ClusterDir = None,
    json_output: Json = False,
) -> None:
    """Start the local cluster's brokers in the background and wait until they answer.

    A schema registry (Confluent's REST API, schemas kept in the `_schemas` topic) and a REST
    proxy (Confluent's REST Proxy API: produce and consume over HTTP) start beside them unless
    --no-schema-registry / --no-rest-proxy: their URLs are printed as KCTL_SCHEMA_REGISTRY_URL
    and KCTL_REST_PROXY_URL.

    On an existing directory this restarts its brokers with their data, ports and settings;
    brokers that are already running are left alone. With several brokers,
    default.replication.factor is min(3, brokers) unless -o sets it, so topics are
    replicated: `kctl topic create demo -p 3` on 3 brokers gives 3 replicas per partition.
    A secured cluster (--security-protocol) is described in docs/security.md.
    """
    with localcluster.BrokerLauncher() as launcher:  # importing brokerd while this prepares
        from brokerd.state.cluster_setup import open_setup  # when a command runs, not for --help

        state = open_setup(resolve_cluster_dir(cluster_dir))
        requested = brokerconfig.parse(broker_config)
        ports = localcluster.plan(state, brokers, port_base)
        is_new = not state.exists()
        protocol = securecluster.check_protocol(
            state.cluster_dir,
            None if is_new else brokerconfig.security_protocol(state.cluster_dir),
            None if security_protocol is None else security_protocol.value,
        )
        cluster_id = state.initialize(ports)
        security = securecluster.secure(state, protocol) if is_new else {}
        settings = {**brokerconfig.remembered(state.cluster_dir), **security, **requested}
        brokerconfig.remember(state.cluster_dir, settings, protocol)
        effective = brokerconfig.effective(settings, len(ports))
        services = _start_services(
            state.cluster_dir, ports, protocol, not no_schema_registry, not no_rest_proxy
        )
        procs = localcluster.start_missing(state, ports, effective, launcher=launcher)
    secured = protocol != SecurityProtocol.PLAINTEXT.value
    urls = {starting.service: starting.ready().url for starting in services}
    if requested and len(procs) < len(ports):
        console.warn("brokers that were already running keep their settings until restarted")
    views = brokerview.view(state)
    for broker in views:
        broker.state = "started" if broker.id in procs else "already running"
    bootstrap = ",".join(b.address for b in views)
    if json_output:
        properties = client_properties.path(state.cluster_dir) if secured else None
        console.print_json(
            {
                "cluster_id": cluster_id,
                "dir": str(state.cluster_dir),
                "bootstrap": bootstrap,
                "security_protocol": protocol,
                "client_properties": None if properties is None else str(properties),
                "broker_config": effective,
                "brokers": [b.to_json() for b in views],
                **{_json_key(s): urls.get(s) for s in localservice.SERVICES},
            }
        )
    else:
        console.print_section(brokerview.section(views, controller=None))
        for service, url in urls.items():
            print(f"export {service.url_env}={url}", flush=True)
        print(f"export KCTL_BOOTSTRAP={bootstrap}", flush=True)  # last: scripts take it with tail -1
    _hint_next(state.cluster_dir, cluster_dir is not None, started=bool(procs))
    if secured:
        _hint_security(state.cluster_dir, protocol, views[0].address)


def _start_services(
    cluster_dir: Path, ports: dict[int, int], protocol: str, registry: bool, rest_proxy: bool
) -> list[localservice.StartingService]:
    """The cluster's HTTP services, started beside its brokers (they find them once they are
    up); the REST proxy uses the registry for its Avro, JSON Schema and Protobuf formats."""
    planned = ",".join(f"{planned_host(i)}:{port}" for i, port in ports.items())
    properties, authenticate_users = securecluster.service_login(cluster_dir, protocol)
    start = partial(
        localservice.start,
        cluster_dir,
        bootstrap=planned,
        client_config_file=properties,
        authenticate_users=authenticate_users,
    )
    started = [start(localservice.SCHEMA_REGISTRY)] if registry else []
    if rest_proxy:
        started.append(start(localservice.REST_PROXY, extra_args=_registry_args(started)))
    return started


def _registry_args(started: list[localservice.StartingService]) -> tuple[str, ...]:
    return ("--schema-registry", started[0].url) if started else ()


def _json_key(service: localservice.Service) -> str:
    return service.directory_name.replace("-", "_")


def _hint_next(directory: Path, explicit_dir: bool, started: bool) -> None:
    where = f" --dir {directory}" if explicit_dir else ""
    console.info(f"Cluster {'started' if started else 'already running'} in {directory}.")
    console.info(
        "Next: kctl topic create demo -p 3; seq 10 | kctl produce demo; "
        f"kctl consume demo -e; kctl topic describe demo; kctl cluster status{where}"
    )


def _hint_security(directory: Path, protocol: str, address: str) -> None:
    properties = client_properties.path(directory)
    users = (
        "add users with `kctl user create`"
        if securecluster.uses_sasl(protocol)
        else f"principals are client certificate subjects (User:CN=...) signed by {directory}/tls/ca.key"
    )
    console.info(
        f"Security: {protocol} listeners, ACLs on; kctl uses the super user's settings in "
        f"{properties} (kcat -F {properties} -b {address} -L); {users}, grant them "
        "with `kctl acl create`."
    )


@app.command()
def down(cluster_dir: ClusterDir = None, json_output: Json = False) -> None:
    """Stop every broker of the local cluster and its services (schema registry, REST proxy,
    connect worker): SIGTERM, then SIGKILL after 10 s; data stays."""
    state = localcluster.existing(cluster_dir)
    netfaults.heal_all(state)  # first: a broker cut off from the quorum could not hand over
    services = {s: localservice.stop(state.cluster_dir, s) for s in localservice.SERVICES}
    outcome = localcluster.stop_all(state)
    if json_output:
        console.print_json(
            {
                "brokers": [{"id": i, "result": r} for i, r in sorted(outcome.items())],
                **{_json_key(s): result for s, result in services.items()},
            }
        )
    else:
        rows: list[tuple[int | str, str]] = list(sorted(outcome.items()))
        rows += [(s.title, result) for s, result in services.items() if result != "not running"]
        console.print_table(["id", "result"], rows)
    if any(r == "still running" for r in [*outcome.values(), *services.values()]):
        raise KctlError("some brokers or services did not stop even after SIGKILL")


@app.command()
def status(cluster_dir: ClusterDir = None, json_output: Json = False) -> None:
    """Show brokers, pids, addresses, liveness, the controller with its epoch, the cluster's
    services (schema registry, REST proxy, connect worker) and the network faults in force.

    Exits 10 when the cluster is unhealthy: a planned broker is dead, paused (its lease is
    older than broker.session.timeout.ms), isolated or shutting down, or no live broker is
    controller.
    """
    state = localcluster.existing(cluster_dir)
    views = brokerview.view(state)
    controller = state.controller()
    problems = [f"broker {b.id} is {b.state}" for b in views if b.state != brokerview.ALIVE]
    live_ids = {b.id for b in views if b.state in (brokerview.ALIVE, brokerview.SHUTTING_DOWN)}
    if controller is None or controller[0] not in live_ids:
        problems.append("no live controller")
    services = {s: localservice.running(state.cluster_dir, s) for s in localservice.SERVICES}
    faults = state.network_faults()
    if json_output:
        console.print_json(
            {
                "cluster_id": state.cluster_id(),
                "dir": str(state.cluster_dir),
                "healthy": not problems,
                "problems": problems,
                "controller": brokerview.controller_json(controller),
                "brokers": [b.to_json() for b in views],
                **{
                    _json_key(s): None if r is None else {"url": r.url, "pid": r.pid}
                    for s, r in services.items()
                },
                "network_faults": faults.to_json(),
            }
        )
    else:
        console.print_section(brokerview.section(views, controller))
        for service, found in services.items():
            if found is not None:
                print(f"{service.title}: {found.url} (pid {found.pid})")
        for line in netfaults.describe(faults):
            print(f"Network fault: {line}")
    if problems:
        raise KctlError("cluster unhealthy: " + ", ".join(problems), ExitCode.UNHEALTHY)


METADATA_POLL_S = 0.2


@app.command()
def metadata(
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Keep printing records as they are written (polled every "
            f"{METADATA_POLL_S:g} s) until Ctrl-C.",
        ),
    ] = False,
    last: Annotated[
        int | None,
        typer.Option(
            "--last",
            "-n",
            metavar="N",
            min=0,
            show_default=False,
            help="Only the last N records (the snapshot the log starts from counts as one), "
            "then, with -f, every new one.",
        ),
    ] = None,
    cluster_dir: ClusterDir = None,
    json_output: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object per line: the record as stored (offset, type, "
            'controller_epoch, time, its fields) plus "text", its line.',
        ),
    ] = False,
) -> None:
    """Print the metadata log, one line per record, saying what changed in Kafka's words.

    The cluster's metadata is an append-only log of records, as KRaft's __cluster_metadata:
    TopicRecord, PartitionRecord, PartitionChangeRecord (leader, leader epoch, ISR, replicas
    as old→new), RemoveTopicRecord and ConfigRecord. Each line names who wrote it: the
    controller with its epoch, a leader changing its ISR (AlterPartition), or nothing for a
    config change, which any broker writes. The log starts from its newest snapshot, if it
    has one (every 50,000 records). Kill a broker with -f running to watch the controller
    move its leaderships. Ctrl-C stops -f (exit 130).
    """
    from kctl.cluster import metadatalog  # the metadata log's records: this command only

    state = localcluster.existing(cluster_dir)
    narrator = metadatalog.Narrator()
    catch_up = state.follow_metadata(narrator)

    def read(final: bool) -> list[metadatalog.Entry]:
        try:
            catch_up()
        except FileNotFoundError:
            pass  # a snapshot deleted as it was being read: the next read starts from the newer one
        narrator.learn(state.fenced_controller())
        narrator.learn(state.controller())  # after the records: it names their epochs
        return narrator.take(final)

    def show(entries: list[metadatalog.Entry]) -> None:
        for entry in entries:
            sys.stdout.write(
                json.dumps(entry.to_json(narrator.controllers), ensure_ascii=False)
                if json_output
                else entry.line(narrator.controllers)
            )
            sys.stdout.write("\n")
        sys.stdout.flush()

    try:
        entries = read(final=True)
        show(entries if last is None else entries[max(0, len(entries) - last) :])
        while follow:
            time.sleep(METADATA_POLL_S)
            if _reader_gone():
                raise BrokenPipeError  # as a write would, but without waiting for a record
            observed = narrator.observed
            show(read(final=False))
            if narrator.observed == observed:  # quiet: a topic's partitions are all written
                show(narrator.take(final=True))
    except KeyboardInterrupt:
        raise typer.Exit(ExitCode.INTERRUPTED) from None


def _reader_gone() -> bool:
    """stdout is a pipe whose reader went away (`-f | head`): poll() reports an error on it."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), 0)  # no events asked: only POLLERR and POLLHUP come
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False  # not a file descriptor (a test's capture): writes will tell


WaitTimeout = Annotated[
    float,
    typer.Option(
        "--wait-timeout",
        metavar="SECONDS",
        min=0.1,
        help="Give up (exit 3) when moving replicas takes longer than this.",
    ),
]


@app.command("add-broker")
def add_broker(
    rebalance: Annotated[
        bool,
        typer.Option(
            "--rebalance",
            help="Then move replicas so they spread evenly over all brokers, "
            "keeping each partition's replication factor; waits until done.",
        ),
    ] = False,
    wait_timeout: WaitTimeout = 300.0,
    cluster_dir: ClusterDir = None,
) -> None:
    """Add a broker to the local cluster (the next free id, on a free port) and start it.

    A new broker holds no replicas: existing partitions stay where they are until moved,
    which --rebalance does by partition reassignment (internal `__` topics stay put).
    """
    from kctl.cluster import scaling  # reassignment's admin clients: not for up and down

    state = localcluster.existing(cluster_dir)
    broker_id = scaling.add_broker(state)
    port = state.planned_brokers()[broker_id]
    console.info(f"Started broker {broker_id} on port {port}.")
    if rebalance:
        moved = scaling.move(scaling.local_connection(state), sorted(state.planned_brokers()), wait_timeout)
        console.info(f"Rebalanced: {moved} partition(s) moved." if moved else "Already balanced.")


@app.command("remove-broker")
def remove_broker(
    broker_id: Annotated[
        int, typer.Argument(metavar="ID", help="Broker id, as in `kctl broker list`.", show_default=False)
    ],
    wait_timeout: WaitTimeout = 300.0,
    cluster_dir: ClusterDir = None,
) -> None:
    """Drain a broker: move every replica it holds onto the others, then stop it and forget it.

    Each partition keeps its replication factor, so this is refused (exit 6) when the other
    brokers are fewer than some topic's replication factor. Its data directory stays.
    """
    from kctl.cluster import scaling

    state = localcluster.existing(cluster_dir)
    moved = scaling.remove_broker(state, broker_id, wait_timeout, localcluster.STOP_TIMEOUT_S)
    console.info(f"Removed broker {broker_id} after moving {moved} partition(s) off it.")


app.command()(netfaultcommands.partition)

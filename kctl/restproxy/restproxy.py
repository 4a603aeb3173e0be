"""`kctl rest-proxy up|down|status`: a REST proxy (Confluent's REST Proxy API) in front of any
Kafka cluster. `kctl cluster up` starts one for the local cluster by itself; these commands are
for a cluster kctl did not start (`-b`), or to restart the local one's."""

from __future__ import annotations

from typing import Annotated

import typer

from kctl.cluster import brokerconfig, localservice, securecluster
from kctl.kafka.bootstrap import resolve_bootstrap, resolve_cluster_dir
from kctl.schema.locate import known_registry_url
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import Bootstrap, ClusterDir, CommandConfig, Json, SchemaRegistryUrl, Timeout

PROXY = localservice.REST_PROXY

app = typer.Typer(
    help="Start, stop and show a REST proxy: Confluent's REST Proxy API (v2 and v3) in front of a "
    "Kafka cluster, so curl, browsers and any HTTP client produce and consume. `kctl cluster up` "
    "starts one for the local cluster; `kctl rest-proxy up -b HOST:PORT` serves another cluster. "
    "Its files are in DIR/rest-proxy/. See docs/rest-proxy.md.",
    no_args_is_help=True,
)


@app.command()
def up(
    bootstrap: Bootstrap = None,
    cluster_dir: ClusterDir = None,
    command_config: CommandConfig = None,
    registry: SchemaRegistryUrl = None,
    timeout: Timeout = 30.0,
    authenticate_users: Annotated[
        bool,
        typer.Option(
            "--authenticate-users",
            help="Ask for HTTP basic credentials and act on the brokers as that user (a SASL cluster: "
            "the -F settings must use SASL).",
        ),
    ] = False,
    json_output: Json = False,
) -> None:
    """Start the REST proxy in the background (unless it runs), wait until it has reached the
    cluster (exit 3 when it gives up), and print its URL as KCTL_REST_PROXY_URL. It keeps its
    port across restarts. Its schema registry is found as other commands find theirs (the local
    cluster's only when the proxy is for that cluster); for the local cluster it logs in as
    `cluster up` started it."""
    directory = resolve_cluster_dir(cluster_dir)
    cluster = resolve_bootstrap(bootstrap, directory)
    local = cluster.source == "local"
    url = known_registry_url(registry, directory, local_cluster=local)
    extra: tuple[str, ...] = ("--cluster-wait-ms", str(int(timeout * 1000)))
    extra += () if url is None else ("--schema-registry", url)
    if local and command_config is None:  # as `cluster up` started it
        command_config, local_sasl = securecluster.service_login(
            directory, brokerconfig.security_protocol(directory)
        )
        authenticate_users = authenticate_users or local_sasl
    started = localservice.start(
        directory, PROXY, cluster.servers, command_config, authenticate_users, extra
    ).serving(cluster.servers)
    if json_output:
        console.print_json({"url": started.url, "pid": started.pid or None})
    else:
        print(f"export {PROXY.url_env}={started.url}", flush=True)


@app.command()
def down(cluster_dir: ClusterDir = None) -> None:
    """Stop the REST proxy (SIGTERM, then SIGKILL after 10 s)."""
    outcome = localservice.stop(resolve_cluster_dir(cluster_dir), PROXY)
    console.info(f"REST proxy: {outcome}")
    if outcome == "still running":
        raise KctlError("the REST proxy did not stop even after SIGKILL")


@app.command()
def status(cluster_dir: ClusterDir = None, json_output: Json = False) -> None:
    """Show the REST proxy's URL and pid; exit 4 when none runs."""
    found = localservice.running(resolve_cluster_dir(cluster_dir), PROXY)
    if json_output:
        console.print_json(None if found is None else {"url": found.url, "pid": found.pid})
    elif found is not None:
        print(f"{found.url} (pid {found.pid})")
    if found is None:
        raise KctlError("no REST proxy runs for this directory", ExitCode.NOT_FOUND)

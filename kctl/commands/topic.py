"""`kctl topic create|list|describe|delete|alter-config`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from rich.text import Text

from kctl import console, sections, topicinfo, topics
from kctl.client import connect, fetch_metadata, result
from kctl.errors import KctlError
from kctl.exit_codes import ExitCode
from kctl.keyvalue import parse_pairs
from kctl.options import DEFAULT_TIMEOUT, Bootstrap, ClusterDir, Json, Settings, Timeout

app = typer.Typer(help="Create, list, describe, delete and configure topics.", no_args_is_help=True)

Name = Annotated[str, typer.Argument(metavar="NAME", help="Topic name.", show_default=False)]


@app.command()
def create(
    name: Name,
    partitions: Annotated[int, typer.Option(
        "--partitions", "-p", help="Number of partitions; -1: the broker's num.partitions.")] = -1,
    replicas: Annotated[int, typer.Option(
        "--replicas", "-r", help="Replication factor; -1: the broker's default.replication.factor.")] = -1,
    config: Annotated[Optional[list[str]], typer.Option(
        "--config", "-c", metavar="KEY=VALUE", show_default=False,
        help="Topic config, e.g. -c cleanup.policy=compact (repeatable).")] = None,
    if_not_exists: Annotated[bool, typer.Option(
        "--if-not-exists", help="Succeed when the topic already exists.")] = False,
    bootstrap: Bootstrap = None, cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT, settings: Settings = None, json_output: Json = False,
) -> None:
    """Create a topic."""
    if partitions == 0 or partitions < -1 or replicas == 0 or replicas < -1:
        raise KctlError("partitions and replicas must be positive (or -1 for the broker default)",
                        ExitCode.INVALID_INPUT)
    configs = dict(parse_pairs(config, "--config"))
    conn = connect(bootstrap, cluster_dir, timeout, settings)
    created = topics.create(conn, name, partitions, replicas, configs, if_not_exists)
    status = "created" if created else "exists"
    if json_output:
        console.print_json({"topic": name, "status": status})
    else:
        console.print_table(["topic", "status"], [[name, Text(status, style="green")]])


@app.command("list")
def list_topics(
    internal: Annotated[bool, typer.Option(
        "--internal", "-i", help="Include internal topics (names starting with __).")] = False,
    bootstrap: Bootstrap = None, cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT, settings: Settings = None, json_output: Json = False,
) -> None:
    """List topics with their partition count and replication factor."""
    conn = connect(bootstrap, cluster_dir, timeout, settings)
    metadata = fetch_metadata(conn.admin(), conn)
    rows = []
    for name, meta in sorted(metadata.topics.items()):
        if name.startswith("__") and not internal:
            continue
        first = meta.partitions.get(0)
        rows.append({"name": name, "partitions": len(meta.partitions),
                     "replication_factor": len(first.replicas) if first else 0})
    if json_output:
        console.print_json(rows)
    else:
        console.print_table(["name", "partitions", "replicas"],
                            [[r["name"], r["partitions"], r["replication_factor"]] for r in rows])


@app.command()
def describe(
    name: Name,
    bootstrap: Bootstrap = None, cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT, settings: Settings = None, json_output: Json = False,
) -> None:
    """Show each partition's leader, epoch, replicas, ISR, offsets and open transactions.

    Offsets: log start, last stable offset (LSO: where read_committed consumers stop; below
    the high watermark while a transaction is open), high watermark, each replica's log end.
    Replicas outside the ISR are red, replicas whose log end is below the high watermark are
    yellow, and a partition without a leader (offline) shows leader "none".
    Per-replica log end offsets, leader epochs and open transactions (producer id:epoch@first
    offset) come from the local cluster's state directory; against another cluster only the
    leader's end (its high watermark) is known, and open transactions show as "-" (null).
    """
    conn = connect(bootstrap, cluster_dir, timeout, settings)
    doc = topicinfo.describe(conn, name)
    if json_output:
        console.print_json(doc)
        return
    parts = doc["partitions"]
    rf = len(parts[0]["replicas"]) if parts else 0
    console.print_table(["key", "value"], [["name", name], ["partitions", len(parts)],
                                           ["replication factor", rf]], title="SUMMARY")
    if doc["configs"] is not None:
        console.print_table(["key", "value", "source"],
                            [[k, c["value"], c["source"]] for k, c in doc["configs"].items()],
                            title="CONFIGS")
    console.print_section(sections.partitions("PARTITIONS", parts))


@app.command()
def delete(
    name: Name,
    bootstrap: Bootstrap = None, cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT, settings: Settings = None,
) -> None:
    """Delete a topic and all its records."""
    conn = connect(bootstrap, cluster_dir, timeout, settings)
    admin = conn.admin()
    fetch_metadata(admin, conn)
    future = admin.delete_topics([topics.validate_name(name)], request_timeout=timeout,
                                 operation_timeout=timeout)[name]
    result(future, f"delete topic {name!r}")
    console.info(f"Deleted topic {name}.")


@app.command("alter-config")
def alter_config(
    name: Name,
    set_: Annotated[Optional[list[str]], typer.Option(
        "--set", "-s", metavar="KEY=VALUE", show_default=False, help="Set a config (repeatable).")] = None,
    delete_: Annotated[Optional[list[str]], typer.Option(
        "--delete", "-d", metavar="KEY", show_default=False,
        help="Remove a config override, back to the default (repeatable).")] = None,
    bootstrap: Bootstrap = None, cluster_dir: ClusterDir = None,
    timeout: Timeout = DEFAULT_TIMEOUT, settings: Settings = None,
) -> None:
    """Change topic configs incrementally; configs not named stay as they are."""
    changes = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
               for k, v in parse_pairs(set_, "--set")]
    changes += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                for k in delete_ or []]
    if not changes:
        raise KctlError("nothing to change: give --set KEY=VALUE and/or --delete KEY", ExitCode.USAGE)
    conn = connect(bootstrap, cluster_dir, timeout, settings)
    admin = conn.admin()
    fetch_metadata(admin, conn)
    resource = ConfigResource(ResourceType.TOPIC, topics.validate_name(name), incremental_configs=changes)
    result(admin.incremental_alter_configs([resource], request_timeout=timeout)[resource],
           f"alter configs of topic {name!r}")
    summary = [f"{c.name}={c.value}" if c.value is not None else f"-{c.name}" for c in changes]
    console.info(f"Updated configs of {name}: {' '.join(summary)}")

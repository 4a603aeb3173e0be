"""`kctl verify`: Jepsen on a laptop. Run a workload while a nemesis breaks the local cluster,
record the history, check it, print the verdict; `kctl verify check FILE` checks a recorded
history again. The command declares the options; kctl.verify.verifying does the work."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.exit_codes import ExitCode
from kctl.shell.options import Json
from kctl.verify import checker, history, nemesis, verdict, verifying
from kctl.verify.verifying import VerifyRequest

app = typer.Typer(
    help="Jepsen on a laptop: idempotent acks=all producers and a consumer group (and, with "
    "--txn, transactional writers) run while a nemesis kills, pauses, throttles and restarts "
    "the local cluster's brokers and its controller. Every send, ack, poll, commit and fault "
    "is recorded to a history file, which is then checked: acknowledged writes lost, "
    "duplicates, offsets that disagree, records skipped by the group's commits, aborted or "
    "uncommitted records returned to read_committed readers, torn transactions and G1c "
    "cycles. Prints a verdict table; exits 11 on any anomaly.\n\n"
    "Against another Kafka-compatible cluster (-b HOST:PORT), run it with --no-faults. "
    "`kctl verify check FILE` checks a recorded history again.",
    short_help="Check Kafka's guarantees under faults, Jepsen-style (history, checker, verdict).",
    invoke_without_command=True,
)

HistoryFile = Annotated[
    Path | None,
    typer.Option(
        "--history",
        metavar="FILE",
        dir_okay=False,
        show_default=False,
        help="Where to write the history (JSON lines). Default: kctl-verify-DATE-TIME.jsonl in the "
        "current directory.",
    ),
]


@app.callback()
@connection_options()
def run(
    ctx: typer.Context,
    time_limit: Annotated[
        str, typer.Option("--time-limit", metavar="DURATION", help="How long the workload runs: 30s, 2m, 90.")
    ] = "30s",
    rate: Annotated[
        str, typer.Option("--rate", metavar="N/s", help="Values written per second, over all producers.")
    ] = "100/s",
    partitions: Annotated[
        int, typer.Option("--partitions", "-p", min=1, help="Partitions of the topic.")
    ] = 3,
    replication_factor: Annotated[
        int,
        typer.Option(
            "--replication-factor", "-r", min=1, help="Replicas of each partition (min.insync.replicas is 2)."
        ),
    ] = 3,
    producers: Annotated[int, typer.Option("--producers", min=1, help="Idempotent acks=all producers.")] = 2,
    consumers: Annotated[int, typer.Option("--consumers", min=1, help="Members of the consumer group.")] = 2,
    txn: Annotated[
        bool,
        typer.Option(
            "--txn",
            help="Also run transactional writers: each reads (read_committed), then writes to several "
            "partitions in one transaction; every fourth transaction is aborted on purpose.",
        ),
    ] = False,
    txn_writers: Annotated[
        int, typer.Option("--txn-writers", min=1, help="Transactional writers (with --txn).")
    ] = 2,
    txn_rate: Annotated[
        str, typer.Option("--txn-rate", metavar="N/s", help="Transactions per second, over all writers.")
    ] = "10/s",
    acks: Annotated[
        str,
        typer.Option(
            "--acks",
            metavar="all|1",
            help="The producers' acks: all (idempotent: the guarantees under test), or 1 (the leader "
            "alone, not idempotent) to see what it loses.",
        ),
    ] = "all",
    unclean: Annotated[
        bool,
        typer.Option(
            "--unclean-leader-election",
            help="Create the topic with unclean.leader.election.enable=true: a replica out of the "
            "ISR may become leader, and what only the ISR had is lost.",
        ),
    ] = False,
    faults: Annotated[
        bool,
        typer.Option(
            "--faults/--no-faults",
            help="Run the nemesis on the local cluster. Other clusters (-b) need --no-faults.",
        ),
    ] = True,
    kinds: Annotated[
        str,
        typer.Option(
            "--nemesis",
            metavar="KINDS",
            help="Fault kinds, taking turns: kill, pause, kill-controller, throttle (one broker each); "
            "lone-broker pauses every broker but one, then kills it and resumes the others (give it "
            "a --fault-duration longer than broker.session.timeout.ms); kill-pause kills one broker, "
            "pauses another for the fault's duration (make it longer than replica.lag.time.max.ms), "
            "then resumes it; partition cuts the brokers apart, Jepsen's shapes in turn (one broker, "
            "a partition's leader, the controller, random halves, a bridge); loss drops 5% of every "
            "broker's packets (both need CAP_NET_ADMIN: see `kctl broker isolate`).",
        ),
    ] = ",".join(nemesis.DEFAULT_KINDS),
    fault_interval: Annotated[
        str,
        typer.Option(
            "--fault-interval", metavar="DURATION", help="Time between one fault's end and the next."
        ),
    ] = "2s",
    fault_duration: Annotated[
        str, typer.Option("--fault-duration", metavar="DURATION", help="How long each fault lasts.")
    ] = "2s",
    fault_count: Annotated[
        int | None,
        typer.Option(
            "--fault-count",
            metavar="N",
            min=1,
            show_default=False,
            help="Stop once the nemesis has injected and healed N faults, Jepsen-style, instead of at "
            "the time limit, which still bounds the run: fewer faults by then is reported as a failure.",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", show_default=False, help="Seed of the nemesis's choice of brokers."),
    ] = None,
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic", "-t", show_default=False, help="Topic to create for the run. Default: verify-RANDOM."
        ),
    ] = None,
    history_file: HistoryFile = None,
    json_output: Json = False,
    options: ConnectionOptions = NO_CONNECTION_OPTIONS,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    verifying.verify(
        VerifyRequest(
            time_limit=time_limit,
            rate=rate,
            partitions=partitions,
            replication_factor=replication_factor,
            producers=producers,
            consumers=consumers,
            txn=txn,
            txn_writers=txn_writers,
            txn_rate=txn_rate,
            acks=acks,
            unclean=unclean,
            faults=faults,
            kinds=kinds,
            fault_interval=fault_interval,
            fault_duration=fault_duration,
            fault_count=fault_count,
            seed=seed,
            topic=topic,
            history_file=history_file,
            json_output=json_output,
            options=options,
        )
    )


@app.command("check")
def check(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", exists=True, dir_okay=False, help="A history written by `kctl verify`."
        ),
    ],
    json_output: Json = False,
) -> None:
    """Check a recorded history again: the same checks and verdict as at the end of a run.

    The history may come from any cluster (`kctl verify -b HOST:PORT --no-faults`); the check
    needs no cluster. Exits 11 on any anomaly, 0 when the history is valid.
    """
    result = checker.check(history.read(file))
    verdict.show(result, json_output)
    if not result.valid:
        raise typer.Exit(ExitCode.ANOMALIES)

"""`kctl verify`: Jepsen on a laptop. Run a workload while a nemesis breaks the local cluster,
record the history, check it, print the verdict; `kctl verify check FILE` checks a recorded
history again."""

from __future__ import annotations

import re
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from kctl.cluster import localcluster
from kctl.kafka import clientprops, topics
from kctl.kafka.client import Connection, checked, connect
from kctl.kafka.errors import KafkaException
from kctl.shell import console
from kctl.shell.connectionoptions import NO_CONNECTION_OPTIONS, ConnectionOptions, connection_options
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.offsets import duration_ms
from kctl.shell.options import Json
from kctl.verify import checker, history, nemesis, verdict, workload

FINAL_READ_TIMEOUT_S = 60.0
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h))+")
_SECONDS = re.compile(r"\d+(?:\.\d+)?")
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:/\s*s)?")

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
    limit_s = parse_duration(time_limit, "--time-limit")
    if acks not in ("all", "1"):
        raise KctlError(
            f"invalid --acks {acks!r}: all or 1 (acks=0 gets no offsets back to check)", ExitCode.USAGE
        )
    if txn and acks != "all":
        raise KctlError("--txn needs --acks all: transactional producers are idempotent", ExitCode.USAGE)
    fault_kinds = nemesis.parse_kinds(kinds)
    if faults and set(fault_kinds) & set(nemesis.NETWORK_KINDS):
        from kctl.cluster import packetfilter

        packetfilter.require_nft()  # before the run: one line, exit 6
    if fault_count is not None and not faults:
        raise KctlError("--fault-count needs faults: drop --no-faults", ExitCode.USAGE)
    conn = connect(options)
    if faults and not clientprops.is_local(conn.bootstrap):
        raise KctlError(
            f"faults are injected only into the local cluster, and {conn.bootstrap.servers} is not "
            "it: add --no-faults to verify another cluster without them",
            ExitCode.USAGE,
        )
    local = localcluster.existing(options.cluster_dir) if faults else None
    run_id = uuid.uuid4().hex[:8]
    plan = workload.Plan(
        topic=topic or f"verify-{run_id}",
        partitions=partitions,
        group=f"kctl-verify-{run_id}",
        producers=producers,
        consumers=consumers,
        txn_writers=txn_writers if txn else 0,
        rate=parse_rate(rate, "--rate"),
        acks=acks,
        txn_rate=parse_rate(txn_rate, "--txn-rate"),
    )
    path = history_file or Path(f"kctl-verify-{datetime.now(UTC):%Y%m%d-%H%M%S}.jsonl")
    recorder = history.HistoryWriter.open(path)
    console.info(f"history: {path}")
    try:
        _create_topic(checked(conn), plan, replication_factor, unclean)
    except BaseException:
        recorder.close()
        raise
    try:
        recorder.meta(
            **workload.settings_for(plan),
            bootstrap=conn.bootstrap.servers,
            faults=faults,
            started=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        nem = None
        if local is not None:
            nem = nemesis.Nemesis(
                local,
                recorder,
                fault_kinds,
                parse_duration(fault_interval, "--fault-interval"),
                parse_duration(fault_duration, "--fault-duration"),
                seed,
                console.info,
                fault_count,
            )
        problems = _run(conn, plan, recorder, nem, limit_s)
    finally:
        recorder.close()
    result = checker.check(history.read(path))
    verdict.show(result, json_output)
    if not result.valid:
        raise typer.Exit(ExitCode.ANOMALIES)
    if problems:
        raise KctlError(
            f"the workload did not run as planned ({'; '.join(problems)}); the history holds what it did"
        )


def _create_topic(conn: Connection, plan: workload.Plan, replication_factor: int, unclean: bool) -> None:
    """The run's topic, with min.insync.replicas=2: acks=all waits for two replicas at least."""
    configs = {
        "min.insync.replicas": str(min(2, replication_factor)),
        "unclean.leader.election.enable": str(unclean).lower(),
    }
    topics.create(conn, plan.topic, plan.partitions, replication_factor, configs)


def _run(
    conn: Connection,
    plan: workload.Plan,
    recorder: history.HistoryWriter,
    nem: nemesis.Nemesis | None,
    limit_s: float,
) -> list[str]:
    """The workload for `limit_s` (or until --fault-count faults; Ctrl-C ends it early) under
    the nemesis, then the final read once every fault is healed. What went wrong with a client
    or the nemesis is returned, to be reported after the verdict: the history still holds
    everything they did."""
    load = workload.Workload(conn, plan, recorder)
    load.start()
    errors: dict[str, BaseException] = {}
    try:
        if nem is not None:
            nem.start()
        try:
            _workload_time(nem, limit_s)
        except KeyboardInterrupt:
            console.info("interrupted: stopping the workload, then the final read")
    finally:
        try:
            if nem is not None:
                nem.stop()
                console.info(f"nemesis: {nem.injected} faults, all healed")
        finally:
            errors = load.stop()
    console.info("final read: every partition from its start")
    reached = load.final_read(FINAL_READ_TIMEOUT_S)
    if reached is None:
        errors[history.FINAL] = workload.left_behind(FINAL_READ_TIMEOUT_S + workload.CLOSE_TIMEOUT_S)
    elif not all(reached.values()):
        short = ", ".join(str(p) for p, r in reached.items() if not r)
        console.warn(
            f"the final read did not reach the end of partition(s) {short} in {FINAL_READ_TIMEOUT_S:g}s"
        )
    if nem is not None and nem.error is not None:
        errors[nemesis.PROCESS] = nem.error
    elif nem is not None and nem.fault_count is not None and nem.injected < nem.fault_count:
        errors[nemesis.PROCESS] = KctlError(
            f"{nem.injected} of the {nem.fault_count} faults of --fault-count injected within "
            f"the time limit ({limit_s:g}s)"
        )
    for name, error in errors.items():
        console.warn(f"{name} stopped early: {_describe(error)}")
    return [f"{name}: {_describe(error)}" for name, error in errors.items()]


def _workload_time(nem: nemesis.Nemesis | None, limit_s: float) -> None:
    """The workload's time: the time limit, or less once the nemesis has injected and healed
    --fault-count faults."""
    if nem is None or nem.fault_count is None:
        time.sleep(limit_s)
    else:
        nem.finished.wait(limit_s)


def _describe(error: BaseException) -> str:
    """One line for a client's or the nemesis's failure."""
    if isinstance(error, KctlError):
        return error.message
    if isinstance(error, KafkaException):
        return error.args[0].str() if error.args else repr(error)
    return f"{type(error).__name__}: {error}"


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


def parse_duration(text: str, option: str) -> float:
    """'30s', '2m', '1m30s', '500ms' or plain seconds ('90'), in seconds; more than 0."""
    text = text.strip()
    if _SECONDS.fullmatch(text):
        seconds = float(text)
    elif _DURATION.fullmatch(text):
        seconds = duration_ms(text) / 1000
    else:
        seconds = 0
    if seconds <= 0:
        raise KctlError(
            f"invalid {option} {text!r}: expected a duration such as 30s, 2m or 90", ExitCode.INVALID_INPUT
        )
    return seconds


def parse_rate(text: str, option: str) -> float:
    """'100/s' or '100': operations per second, more than 0."""
    found = _RATE.fullmatch(text.strip())
    rate = float(found[1]) if found else 0.0
    if rate <= 0:
        raise KctlError(f"invalid {option} {text!r}: expected a rate such as 100/s", ExitCode.INVALID_INPUT)
    return rate

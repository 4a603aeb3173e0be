"""What `kctl verify` does with its options: run the workload while the nemesis breaks the
local cluster, record the history, check it and print the verdict."""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import typer

from kctl.cluster import localcluster
from kctl.kafka import clientprops, topics
from kctl.kafka.client import Connection, checked, connect
from kctl.kafka.errors import KafkaException
from kctl.shell import console
from kctl.shell.connectionoptions import ConnectionOptions
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.shell.offsets import duration_ms
from kctl.verify import checker, history, nemesis, verdict, workload

FINAL_READ_TIMEOUT_S = 60.0
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h))+")
_SECONDS = re.compile(r"\d+(?:\.\d+)?")
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:/\s*s)?")


@dataclass(frozen=True)
class VerifyRequest:
    """`kctl verify`'s options as given (see its --help); verify() checks them together."""

    time_limit: str  # a duration: 30s, 2m, 90
    rate: str  # N/s
    partitions: int
    replication_factor: int
    producers: int
    consumers: int
    txn: bool
    txn_writers: int
    txn_rate: str  # N/s
    acks: str  # all or 1
    unclean: bool  # --unclean-leader-election
    faults: bool
    kinds: str  # --nemesis, comma-separated
    fault_interval: str
    fault_duration: str
    fault_count: int | None
    seed: int | None
    topic: str | None
    history_file: Path | None
    json_output: bool
    options: ConnectionOptions


def verify(request: VerifyRequest) -> None:
    """Run, record and check; exits 11 on any anomaly. Options that do not go together are
    refused before the cluster is contacted."""
    limit_s = parse_duration(request.time_limit, "--time-limit")
    fault_kinds = _checked_kinds(request)
    conn = connect(request.options)
    if request.faults and not clientprops.is_local(conn.bootstrap):
        raise KctlError(
            f"faults are injected only into the local cluster, and {conn.bootstrap.servers} is not "
            "it: add --no-faults to verify another cluster without them",
            ExitCode.USAGE,
        )
    local = localcluster.existing(request.options.cluster_dir) if request.faults else None
    plan = _plan(request)
    path = request.history_file or Path(f"kctl-verify-{datetime.now(UTC):%Y%m%d-%H%M%S}.jsonl")
    recorder = history.HistoryWriter.open(path)
    console.info(f"history: {path}")
    try:
        _create_topic(checked(conn), plan, request.replication_factor, request.unclean)
    except BaseException:
        recorder.close()
        raise
    try:
        recorder.meta(
            **workload.settings_for(plan),
            bootstrap=conn.bootstrap.servers,
            faults=request.faults,
            started=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        nem = None
        if local is not None:
            nem = nemesis.Nemesis(
                local,
                recorder,
                fault_kinds,
                parse_duration(request.fault_interval, "--fault-interval"),
                parse_duration(request.fault_duration, "--fault-duration"),
                request.seed,
                console.info,
                request.fault_count,
            )
        problems = _run(conn, plan, recorder, nem, limit_s)
    finally:
        recorder.close()
    result = checker.check(history.read(path))
    verdict.show(result, request.json_output)
    if not result.valid:
        raise typer.Exit(ExitCode.ANOMALIES)
    if problems:
        raise KctlError(
            f"the workload did not run as planned ({'; '.join(problems)}); the history holds what it did"
        )


def _checked_kinds(request: VerifyRequest) -> tuple[str, ...]:
    """The nemesis's fault kinds, once the options that do not go together are refused."""
    if request.acks not in ("all", "1"):
        raise KctlError(
            f"invalid --acks {request.acks!r}: all or 1 (acks=0 gets no offsets back to check)",
            ExitCode.USAGE,
        )
    if request.txn and request.acks != "all":
        raise KctlError("--txn needs --acks all: transactional producers are idempotent", ExitCode.USAGE)
    fault_kinds = nemesis.parse_kinds(request.kinds)
    if request.faults and set(fault_kinds) & set(nemesis.NETWORK_KINDS):
        from kctl.cluster import packetfilter

        packetfilter.require_nft()  # before the run: one line, exit 6
    if request.fault_count is not None and not request.faults:
        raise KctlError("--fault-count needs faults: drop --no-faults", ExitCode.USAGE)
    return fault_kinds


def _plan(request: VerifyRequest) -> workload.Plan:
    """The workload asked for, on a topic and group named after a new run id."""
    run_id = uuid.uuid4().hex[:8]
    return workload.Plan(
        topic=request.topic or f"verify-{run_id}",
        partitions=request.partitions,
        group=f"kctl-verify-{run_id}",
        producers=request.producers,
        consumers=request.consumers,
        txn_writers=request.txn_writers if request.txn else 0,
        rate=parse_rate(request.rate, "--rate"),
        acks=request.acks,
        txn_rate=parse_rate(request.txn_rate, "--txn-rate"),
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

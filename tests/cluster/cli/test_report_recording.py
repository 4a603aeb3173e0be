"""`kctl watch --record` on a real cluster while a follower is paused, then `kctl report`.

Three brokers, one partition (replication factor 3, min.insync.replicas=2) written by an
acks=all producer; a follower is SIGSTOPped until it drops out of the ISR, then continued
until it is back. The watch records without a terminal, as a script would run it; the
recording and the picture it draws must both show what happened.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from tests.cluster_harness import wait_until
from tests.kafka_helpers import create_topic, partition_record, produce_sync
from tests.kctl.cli import kctl_command, kctl_env
from tests.kctl.local import kctl_in

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

SVG = "{http://www.w3.org/2000/svg}"


def moments(path) -> list[dict]:
    """The whole lines recorded so far (the last may be half written)."""
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            pass
    return found


def partition(moment: dict) -> dict:
    return moment["topics"][0]["partitions"][0]


def committed_without(moment: dict, follower: int, offset: int) -> bool:
    p = partition(moment)
    return p["high_watermark"] == offset and follower not in p["isr"]


def test_a_recording_of_a_paused_follower_shows_the_isr_shrink_and_draws_it(
    cluster_factory, kctl_processes, tmp_path
):
    cluster = cluster_factory(3, {"auto.leader.rebalance.enable": "false"})
    create_topic(cluster, "lesson", 1, 3, {"min.insync.replicas": "2"}, wait_for_leaders=True)
    record = partition_record(cluster, "lesson")
    follower = next(b for b in record.replicas if b != record.leader)

    # --duration: a script's recording ends by itself, with every moment written
    short = tmp_path / "short.jsonl"
    done = kctl_in(cluster.dir, "watch", "lesson", "--record", str(short), "--duration", "1.5s", timeout=60)
    assert len(moments(short)) >= 3 and "recorded" in done.stderr

    path = tmp_path / "failover.jsonl"
    watch = kctl_processes(cluster.dir, "watch", "lesson", "--record", str(path), "--interval", "0.2")
    assert all(
        err is None for err, _, _ in produce_sync(cluster.bootstrap, "lesson", [b"a"] * 200, acks="all")
    )
    wait_until(lambda: any(partition(m)["high_watermark"] == 200 for m in moments(path)), 30, "200 recorded")
    cluster.signal(follower, signal.SIGSTOP)
    try:
        wait_until(lambda: follower not in partition(moments(path)[-1])["isr"], 60, "the paused follower out")
        paused_writes = produce_sync(cluster.bootstrap, "lesson", [b"b"] * 100, acks="all")
        out = wait_until(
            lambda: next((m for m in moments(path) if committed_without(m, follower, 300)), None),
            30,
            "300 committed without the paused follower, recorded",
        )
    finally:
        cluster.signal(follower, signal.SIGCONT)
    assert all(err is None for err, _, _ in paused_writes)  # an ISR of 2 = min.insync.replicas
    wait_until(lambda: len(partition(moments(path)[-1])["isr"]) == 3, 60, "the follower back in the ISR")
    watch.proc.send_signal(signal.SIGINT)  # Ctrl-C: recording ends, every moment kept
    assert watch.finish(30) == 130
    assert any("recorded" in line and str(path) in line for line in watch.err)

    recorded = moments(path)
    assert len(recorded) == len(path.read_text().splitlines())  # no half-written line
    isr_sizes = [len(partition(m)["isr"]) for m in recorded]
    shrunk = isr_sizes.index(2)
    assert 3 in isr_sizes[:shrunk] and 3 in isr_sizes[shrunk:]
    assert all(partition(m)["min_insync_replicas"] == 2 for m in recorded if partition(m)["high_watermark"])
    narrated = [line for m in recorded for line in m["events"]]
    assert f"broker {follower}: alive -> paused" in narrated
    assert any(line.startswith("lesson/0: ISR shrank to [") for line in narrated)
    assert any(line.startswith("lesson/0: ISR grew to [") for line in narrated)
    paused = [m for m in recorded if {"broker": follower, "fault": "paused"} in m["faults"]]
    assert paused and all(not m["faults"] for m in recorded[:3])
    assert partition(out)["log_end_offsets"][str(follower)] == 200  # it stood still while out
    assert partition(recorded[-1])["high_watermark"] == 300

    svg, html = tmp_path / "failover.svg", tmp_path / "failover.html"
    kctl_in(cluster.dir, "report", str(path), "--svg", str(svg), "--html", str(html))
    root = ET.parse(svg).getroot()
    ids = {e.get("id") for e in root.iter() if e.get("id")}
    assert any(i.startswith(f"fault-broker-{follower}-paused-") for i in ids)
    words = ["".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")]
    assert f"broker {follower} paused" in words and f"broker {follower} log end" in words
    assert f"lesson/0: leader {record.leader}, epoch {record.leader_epoch} at the start" in words
    assert "ISR shrank to [" in html.read_text()


def test_the_live_watch_on_a_terminal_records_and_stops_after_its_duration(cluster_factory, tmp_path):
    cluster = cluster_factory(1)
    create_topic(cluster, "demo", 2, 1, wait_for_leaders=True)
    path = tmp_path / "live.jsonl"
    args = ("watch", "--interval", "0.1", "--record", str(path), "--duration", "2s")
    pid, fd = pty.fork()
    if pid == 0:  # the child: kctl watch with a terminal as stdout; never returns to pytest
        try:
            os.execve(
                sys.executable,
                kctl_command(*args),
                {**kctl_env({"KCTL_HOME": str(cluster.dir)}), "COLUMNS": "120"},
            )
        finally:
            os._exit(127)
    screen = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # the child closed the terminal: it has exited
                    break
                if not chunk:
                    break
                screen += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, screen[-2000:]
    assert screen.count(b"TOPIC demo") >= 2  # drawn live, redrawn
    recorded = moments(path)
    assert len(recorded) >= 5 and all(m["topics"][0]["topic"] == "demo" for m in recorded)
    assert recorded[-1]["time"] - recorded[0]["time"] == pytest.approx(2, abs=1)

"""`kctl cluster metadata`, the command: against a state directory written in-process
(following, Ctrl-C, a closed pipe) and once against a real cluster whose broker is killed."""

import json
import re
import signal
import subprocess
from dataclasses import replace

import pytest

from brokerd.state import ClusterState
from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import free_port, wait_until
from tests.kctl.cli import kctl_command, kctl_env
from tests.kctl.local import BROKERS_ONLY, kctl_in, kctl_json
from tests.kctl.test_cluster_metadata import TOPIC_ID, payments

pytestmark = pytest.mark.cluster


# -- the command on a state directory ------------------------------------------------------------
def test_no_cluster_is_exit_3(tmp_path):
    result = kctl_in(tmp_path / "none", "cluster", "metadata", expect=ExitCode.UNREACHABLE)
    assert "no cluster in" in result.stderr


@pytest.fixture
def state(tmp_path):
    """A cluster's state directory and no broker: records are written in-process."""
    state = ClusterState(tmp_path)
    state.initialize({1: free_port()})
    epoch = state.claim_controller(1, lambda broker: False)
    with state.update_topics(epoch) as topics:
        topics["payments"] = payments()
    return state


def test_last_n_and_json(state):
    with state.update_topic_configs() as topics:
        topics["payments"] = replace(topics["payments"], configs={"retention.ms": "1000"})
    lines = kctl_in(state.cluster_dir, "cluster", "metadata", "-n", "2").stdout.decode().splitlines()
    assert lines == [
        "#3 PartitionRecord payments/2 replicas [1,2,3] leader 3 ISR [1,2,3] by controller 1 (epoch 1)",
        "#4 ConfigRecord TOPIC payments retention.ms set to 1000",
    ]
    docs = [
        json.loads(line)
        for line in kctl_in(state.cluster_dir, "cluster", "metadata", "--json").stdout.splitlines()
    ]
    assert [d["offset"] for d in docs] == [0, 1, 2, 3, 4]
    assert docs[0]["type"] == "TopicRecord" and docs[0]["topic_id"] == TOPIC_ID
    assert docs[4]["text"] == lines[1] and docs[4]["value"] == "1000"


def test_follow_prints_new_records_until_ctrl_c(state, kctl_processes):
    follower = kctl_processes(state.cluster_dir, "cluster", "metadata", "-f", "-n", "1")
    follower.wait_for(lambda: follower.out, "the last record so far")
    with state.update_dynamic_broker_configs(None) as configs:
        configs["log.retention.ms"] = "5000"
    follower.wait_for(lambda: len(follower.out) == 2, "the new record")
    assert follower.out[0].startswith("#3 PartitionRecord payments/2 ")
    assert follower.out[1] == "#4 ConfigRecord BROKER <default> log.retention.ms set to 5000"
    follower.proc.send_signal(signal.SIGINT)
    assert follower.finish() == ExitCode.INTERRUPTED


def test_follow_ends_when_its_reader_goes_away(state):
    proc = subprocess.Popen(
        kctl_command("cluster", "metadata", "-f", "--dir", str(state.cluster_dir)),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=kctl_env(),
    )
    proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    try:
        assert proc.wait(10) == ExitCode.BROKEN_PIPE  # without waiting for another record
    finally:
        proc.kill()


# -- a real cluster --------------------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_a_killed_leader_in_the_log(cluster_dir):
    kctl_in(cluster_dir, "cluster", "up", "--brokers", "2", *BROKERS_ONLY)
    kctl_in(cluster_dir, "topic", "create", "demo", "-p", "2", "-c", "min.insync.replicas=1")
    partition = kctl_json(cluster_dir, "topic", "describe", "demo")["partitions"][0]
    victim = partition["leader"]
    survivor = ({1, 2} - {victim}).pop()
    kctl_in(cluster_dir, "broker", "kill", str(victim))

    moved = re.compile(
        rf"#\d+ PartitionChangeRecord demo/0 leader {victim}→{survivor}, "
        r"leader epoch (\d+)→(\d+), ISR \[[12],[12]\]→\["
        + str(survivor)
        + r"\] by controller (\d+) \(epoch (\d+)\)"
    )

    def log_lines():
        lines = kctl_in(cluster_dir, "cluster", "metadata").stdout.decode().splitlines()
        return lines if any(moved.fullmatch(line) for line in lines) else None

    lines = wait_until(log_lines, 20, "the controller to move demo/0's leader", interval=0.2)

    assert re.fullmatch(
        r"#\d+ TopicRecord demo id [0-9a-f]{8}…: 2 partitions to come, "
        r"configs \{min.insync.replicas=1\} by (controller \d|the controller) "
        r"\(epoch \d+\)",
        next(line for line in lines if "TopicRecord demo" in line),
    )
    assert len([line for line in lines if line.split()[1:3] == ["PartitionRecord", "demo/0"]]) == 1
    old_epoch, new_epoch, by, epoch = moved.fullmatch(
        next(line for line in lines if moved.fullmatch(line))
    ).groups()
    assert int(new_epoch) == int(old_epoch) + 1
    controller = kctl_json(cluster_dir, "broker", "list")["controller"]
    assert (int(by), int(epoch)) == (controller["broker_id"], controller["epoch"]) and int(by) == survivor

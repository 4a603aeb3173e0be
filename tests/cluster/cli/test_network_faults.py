"""Network faults on real brokers through the CLI: `kctl broker isolate|heal|netem` and `kctl
cluster partition` drop real packets (nftables) and cut brokers off from the controller
quorum, and the cluster must do what Kafka does about it: fence the isolated leader and elect
another, lose nothing acknowledged with acks=all, truncate what an isolated leader took alone
with acks=1, shrink the ISR on a one-way cut, and leave no rule behind."""

import json
import signal
import subprocess
import time

import pytest

from brokerd.state import ClusterState
from kctl.cluster import packetfilter
from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.cli import kctl_command, kctl_env
from tests.kctl.local import BROKERS_ONLY, described_partition, kctl_in, kctl_json

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

SESSION_MS = 2000
WITHOUT_NET_ADMIN = ("setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin")
SETTINGS = ("-o", f"broker.session.timeout.ms={SESSION_MS}", "-o", "replica.lag.time.max.ms=2000")


def up(directory, topic_config=("min.insync.replicas=2",)) -> dict[int, str]:
    """A 3-broker cluster with topic `t` (1 partition, RF 3); each broker's address."""
    started = kctl_json(directory, "cluster", "up", *SETTINGS, *BROKERS_ONLY)
    configs = [arg for c in topic_config for arg in ("-c", c)]
    kctl_in(directory, "topic", "create", "t", "-p", "1", "-r", "3", *configs)
    return {b["id"]: f"{b['host']}:{b['port']}" for b in started["brokers"]}


def partition0(directory) -> dict:
    return kctl_json(directory, "topic", "describe", "t")["partitions"][0]


def settled(directory, predicate, what, timeout=20.0) -> dict:
    return wait_until(
        lambda: (lambda p: p if predicate(p) else None)(described_partition(directory, "t")),
        timeout,
        what,
        interval=0.1,
    )


def leader_in_metadata(directory) -> int:
    """Partition 0's leader as the controller last wrote it."""
    return ClusterState(directory).topics()["t"].partitions[0].leader


def consumed(directory) -> list[str]:
    return kctl_in(directory, "consume", "t", "-e").stdout.decode().split()


def lines(values) -> str:
    return "".join(f"{v}\n" for v in values)


def test_an_isolated_leader_is_fenced_and_acks_all_loses_nothing(cluster_dir):
    addresses = up(cluster_dir)
    kctl_in(cluster_dir, "produce", "t", "--acks", "all", input=lines(range(100)))
    leader = partition0(cluster_dir)["leader"]
    # A producer in the middle of writing when its leader is cut off: what it had in flight to
    # it is acknowledged later by the new leader (resent, kept once by idempotence) or fails;
    # librdkafka may also stay on the dead connection past the deadline (indeterminate).
    producer = subprocess.Popen(
        kctl_command(
            "produce", "t", "--acks", "all", "--json", "--timeout", "15", "-X", "request.timeout.ms=5000"
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=kctl_env({"KCTL_HOME": str(cluster_dir)}),
    )
    try:
        producer.stdin.write(lines(range(100, 200)).encode())
        producer.stdin.flush()
        kctl_in(cluster_dir, "broker", "isolate", str(leader))
        isolated_at = time.monotonic()
        wait_until(lambda: leader_in_metadata(cluster_dir) != leader, SESSION_MS / 1000 + 2, "a new leader")
        assert time.monotonic() - isolated_at < SESSION_MS / 1000 + 2
        reports, _ = producer.communicate(timeout=60)  # closes its input: it flushes and ends
    finally:
        producer.kill()
        producer.wait()
    moved = partition0(cluster_dir)
    assert moved["leader"] != leader and set(moved["isr"]) == set(addresses) - {leader}
    status = kctl_json(cluster_dir, "cluster", "status", expect=ExitCode.UNHEALTHY)
    assert status["network_faults"]["cut_from_quorum"] == [leader]
    # a producer started now reaches the new leader: every record acknowledged
    kctl_in(cluster_dir, "produce", "t", "--acks", "all", input=lines(range(200, 300)))
    kctl_in(cluster_dir, "broker", "heal", str(leader))
    settled(cluster_dir, lambda p: len(p["isr"]) == 3, "the healed broker back in the ISR")
    acknowledged = [
        json.loads(r)["offset"] for r in reports.decode().splitlines() if not json.loads(r)["error"]
    ]
    log = {
        r["offset"]: int(r["value"])
        for r in map(json.loads, kctl_in(cluster_dir, "consume", "t", "-e", "--json").stdout.splitlines())
    }
    values = list(log.values())
    assert values == sorted(set(values))  # in order, each once
    assert set(range(100)) | set(range(200, 300)) <= set(values)
    assert all(100 <= log.get(offset, -1) < 200 for offset in acknowledged)  # nothing acknowledged lost


def test_acks_1_writes_the_isolated_leader_took_alone_are_truncated_on_heal(cluster_dir, kctl_processes):
    addresses = up(cluster_dir, topic_config=())
    kctl_in(cluster_dir, "produce", "t", "--acks", "all", input=lines(["kept1", "kept2"]))
    leader = partition0(cluster_dir)["leader"]
    others = sorted(set(addresses) - {leader})
    # A running producer that knows the leader before the cut, as an application would: it
    # goes on writing there (a new one might ask a broker that already knows the new leader).
    producer = kctl_processes(cluster_dir, "produce", "t", "--acks", "1", "-b", addresses[leader])
    producer.write(b"kept3\n")
    settled(cluster_dir, lambda p: p["high_watermark"] == 3, "kept3 replicated")
    kctl_in(cluster_dir, "broker", "isolate", str(leader), "--from", f"{others[0]},{others[1]},controller")
    producer.write(lines(f"alone{i}" for i in range(5)).encode())
    producer.proc.stdin.close()
    assert producer.finish() == 0, producer.err  # acknowledged, by the isolated leader alone
    settled(cluster_dir, lambda p: p["leader"] in others, "a leader elected without the isolated one")
    survivors = ",".join(addresses[b] for b in others)
    kctl_in(cluster_dir, "produce", "t", "--acks", "all", "-b", survivors, input=lines(["after1", "after2"]))
    kctl_in(cluster_dir, "broker", "heal")
    settled(cluster_dir, lambda p: len(p["isr"]) == 3, "the old leader back in the ISR")
    assert consumed(cluster_dir) == ["kept1", "kept2", "kept3", "after1", "after2"]
    log = (cluster_dir / "brokers" / str(leader) / "broker.log").read_text()
    assert "cannot reach the controller quorum" in log and "reaches the controller quorum again" in log
    assert "t-0: truncating divergent log from 8 to 3" in log  # alone0-4, taken alone


def test_a_one_way_cut_from_the_leader_shrinks_the_isr_and_heals(cluster_dir):
    up(cluster_dir, topic_config=())
    kctl_in(cluster_dir, "produce", "t", "--acks", "all", input=lines(range(10)))
    before = partition0(cluster_dir)
    leader = before["leader"]
    follower = next(b for b in before["replicas"] if b != leader)
    # the follower's fetches arrive; the leader's answers are lost
    kctl_in(cluster_dir, "broker", "isolate", str(leader), "--from", str(follower), "--direction", "out")
    kctl_in(cluster_dir, "produce", "t", "--acks", "1", input=lines(range(10, 20)))
    shrunk = settled(cluster_dir, lambda p: follower not in p["isr"], "the ISR to drop the cut follower")
    assert shrunk["leader"] == leader  # the leader reaches the quorum: nothing else moves
    kctl_in(cluster_dir, "broker", "heal", str(leader))
    settled(cluster_dir, lambda p: follower in p["isr"], "the follower back in the ISR")
    assert consumed(cluster_dir) == [str(i) for i in range(20)]


def test_a_partition_fences_the_minority_side(cluster_dir):
    up(cluster_dir)
    leader = partition0(cluster_dir)["leader"]
    others = sorted({1, 2, 3} - {leader})
    kctl_in(cluster_dir, "cluster", "partition", str(leader), "/", f"{others[0]},{others[1]}")
    settled(cluster_dir, lambda p: p["leader"] in others and leader not in p["isr"], "the majority leading")
    text = kctl_in(cluster_dir, "cluster", "status", expect=ExitCode.UNHEALTHY).stdout.decode()
    assert f"Network fault: broker {leader} and broker {others[0]} cannot reach each other" in text
    watched = kctl_json(cluster_dir, "watch", "t", "--once")
    assert {b["id"]: b["state"] for b in watched["brokers"]}[leader] == "isolated"
    assert watched["network_faults"]["cut_from_quorum"] == [leader]
    kctl_in(cluster_dir, "produce", "t", "--acks", "all", input=lines(range(5)))
    kctl_in(cluster_dir, "broker", "heal")
    settled(cluster_dir, lambda p: len(p["isr"]) == 3, "the whole ISR again")
    assert consumed(cluster_dir) == [str(i) for i in range(5)]


def test_packet_loss_on_every_broker_under_acks_all_loses_nothing(cluster_dir):
    up(cluster_dir)
    for broker_id in (1, 2, 3):
        kctl_in(cluster_dir, "broker", "netem", str(broker_id), "--loss", "5%")
    assert "numgen random mod 100 < 5 drop" in packetfilter.rules_in_force(cluster_dir)
    kctl_in(cluster_dir, "produce", "t", "--acks", "all", "--timeout", "60", input=lines(range(3000)))
    kctl_in(cluster_dir, "broker", "heal")
    assert consumed(cluster_dir) == [str(i) for i in range(3000)]


def test_no_rule_outlives_what_made_it(cluster_dir):
    up(cluster_dir)
    kctl_in(cluster_dir, "broker", "isolate", "2", "--from", "3")
    assert packetfilter.rules_in_force(cluster_dir) is not None
    # a broker under a fault dies: the keeper heals its faults
    kctl_in(cluster_dir, "broker", "kill", "2")
    wait_until(lambda: packetfilter.rules_in_force(cluster_dir) is None, 5, "the dead broker's rules to go")
    kctl_in(cluster_dir, "broker", "start", "2")
    # Ctrl-C of the command holding a fault heals it
    holder = subprocess.Popen(
        kctl_command("broker", "netem", "1", "--loss", "20%", "--for", "60"),
        stderr=subprocess.PIPE,
        env=kctl_env({"KCTL_HOME": str(cluster_dir)}),
    )
    try:
        wait_until(lambda: packetfilter.rules_in_force(cluster_dir), 10, "the loss rule")
        holder.send_signal(signal.SIGINT)
        assert holder.wait(10) == ExitCode.INTERRUPTED
    finally:
        holder.kill()
        holder.wait()
    assert packetfilter.rules_in_force(cluster_dir) is None
    # and the cluster stopping heals everything
    kctl_in(cluster_dir, "cluster", "partition", "1", "/", "2,3")
    kctl_in(cluster_dir, "cluster", "down")
    assert packetfilter.rules_in_force(cluster_dir) is None
    after = kctl_json(cluster_dir, "cluster", "status", expect=ExitCode.UNHEALTHY)
    assert after["network_faults"]["cuts"] == []


def test_without_cap_net_admin_a_fault_is_one_line_and_exit_6(cluster_dir):
    up(cluster_dir)
    result = subprocess.run(
        [*WITHOUT_NET_ADMIN, *kctl_command("broker", "isolate", "1")],
        capture_output=True,
        text=True,
        env=kctl_env({"KCTL_HOME": str(cluster_dir)}),
    )
    assert result.returncode == ExitCode.CONFLICT
    assert result.stderr.strip().splitlines() == [
        "kctl: error: network faults need CAP_NET_ADMIN (run kctl as root, or the cluster and "
        "kctl in a namespace of their own: unshare -rn)"
    ]
    assert kctl_json(cluster_dir, "cluster", "status")["network_faults"]["cut_from_quorum"] == []

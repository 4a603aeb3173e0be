"""What `kctl broker isolate`, `cluster partition` and `broker netem` ask of the packet filter
and of the state directory, and how they read their arguments; the rules' effect on real
brokers is in tests/cluster/cli/test_network_faults.py."""

import pytest

from brokerd.state import ClusterState
from brokerd.state.faults import CLIENTS, NetworkFaults
from kctl.cluster import netfaults, packetfilter
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

pytestmark = pytest.mark.unit

ADDRESSES = {1: ("127.0.1.1", 9001), 2: ("127.0.1.2", 9002), 3: ("127.0.1.3", 9003)}


def rules(faults: NetworkFaults) -> list[str]:
    text = packetfilter.ruleset("kctl_t", faults, ADDRESSES)
    return [line.strip() for line in text.splitlines() if line.strip().startswith("ip ")]


def test_a_cut_drops_what_the_sender_sends_the_receiver_only_on_this_clusters_ports():
    text = packetfilter.ruleset("kctl_t", NetworkFaults(frozenset({(1, 2)})), ADDRESSES)
    assert "elements = { 9001, 9002, 9003 }" in text
    assert "tcp dport != @ports tcp sport != @ports accept" in text  # other clusters pass
    assert rules(NetworkFaults(frozenset({(1, 2)}))) == ["ip saddr 127.0.1.1 ip daddr 127.0.1.2 drop"]


def test_clients_are_every_address_that_is_not_a_broker():
    assert rules(NetworkFaults(frozenset({(CLIENTS, 2), (2, CLIENTS)}))) == [
        "ip saddr != @brokers ip daddr 127.0.1.2 drop",
        "ip saddr 127.0.1.2 ip daddr != @brokers drop",
    ]


def test_loss_drops_a_share_of_the_brokers_packets_both_ways_and_draws_each_packet_once():
    assert rules(NetworkFaults(loss={3: 5, 1: 20})) == [
        "ip saddr 127.0.1.1 numgen random mod 100 < 20 drop",
        "ip daddr 127.0.1.1 ip saddr != @lossy numgen random mod 100 < 20 drop",
        "ip saddr 127.0.1.3 numgen random mod 100 < 5 drop",
        "ip daddr 127.0.1.3 ip saddr != @lossy numgen random mod 100 < 5 drop",
    ]
    assert "set lossy { type ipv4_addr; elements = { 127.0.1.1, 127.0.1.3 }; }" in packetfilter.ruleset(
        "kctl_t", NetworkFaults(loss={3: 5, 1: 20}), ADDRESSES
    )


def test_no_packet_fault_leaves_no_table():
    batch = packetfilter.ruleset("kctl_t", NetworkFaults(cut_from_quorum=frozenset({1})), ADDRESSES)
    assert batch == "table inet kctl_t\ndelete table inet kctl_t\n"


def test_the_faults_document_round_trips_and_goes_when_empty(tmp_path):
    state = ClusterState(tmp_path)
    state.initialize({1: 9001, 2: 9002})
    faults = NetworkFaults(frozenset({(1, 2), (CLIENTS, 1)}), frozenset({1}), {2: 5})
    assert state.change_network_faults(lambda _: faults) == faults
    assert state.network_faults() == faults
    assert state.change_network_faults(lambda f: f.without({1, 2})) == NetworkFaults()
    assert not (state.dir / "faults" / "network.json").exists()


def test_a_broker_cut_off_from_the_quorum_can_neither_write_nor_renew_its_lease(tmp_path):
    kctl_view = ClusterState(tmp_path)
    kctl_view.initialize({1: 9001, 2: 9002})
    broker_view = ClusterState(tmp_path, member=1)
    assert broker_view.reaches_quorum()
    kctl_view.change_network_faults(lambda _: NetworkFaults(cut_from_quorum=frozenset({1})))
    assert not broker_view.reaches_quorum()
    assert ClusterState(tmp_path, member=2).reaches_quorum()
    with pytest.raises(TimeoutError, match="broker 1 cannot reach the controller quorum"):
        broker_view.heartbeat(1)
    with pytest.raises(TimeoutError):
        broker_view.allocate_producer_ids(1)
    assert not broker_view.take_metadata_delta()  # it learns nothing new
    kctl_view.change_network_faults(lambda f: f.without({1}))
    assert broker_view.reaches_quorum()


def test_peers_and_sides_are_read_as_kafka_users_write_them():
    assert netfaults.parse_peers("2, clients", [2, 3]) == ({2, CLIENTS}, False)
    assert netfaults.parse_peers("controller", [2, 3]) == (set(), True)
    assert netfaults.parse_sides(["1", "/", "2,3"], [1, 2, 3]) == [{1}, {2, 3}]
    assert netfaults.parse_sides(["1/3"], [1, 2, 3]) == [{1}, {3}]
    for bad in (["1"], ["1", "/", "1"], ["1", "/", "9"], ["x", "/", "2"]):
        with pytest.raises(KctlError) as refused:
            netfaults.parse_sides(bad, [1, 2, 3])
        assert refused.value.code == ExitCode.USAGE
    with pytest.raises(KctlError, match="'9' is not a broker id"):
        netfaults.parse_peers("9", [2, 3])


def test_faults_are_told_as_pairs_one_way_cuts_quorum_and_loss():
    faults = NetworkFaults(frozenset({(1, 2), (2, 1), (1, 3)}), frozenset({1}), {2: 5})
    assert netfaults.describe(faults) == [
        "broker 1 and broker 2 cannot reach each other",
        "what broker 1 sends broker 3 is lost",
        "broker 1 is cut off from the controller quorum",
        "broker 2 loses 5% of its packets",
    ]

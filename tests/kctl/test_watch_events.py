"""The narration `kctl watch` prints under its tables: what changed between two snapshots."""

import pytest

from kctl.report import recording
from kctl.report.chart import _fault_words
from kctl.watch.events import changes
from kctl.watch.record import moment, network_faults

pytestmark = pytest.mark.unit


def snap(leader=1, epoch=0, isr=(1, 2, 3), states=("alive", "alive", "alive"), controller=(1, 1), groups=()):
    return {
        "controller": {"broker_id": controller[0], "epoch": controller[1]},
        "brokers": [{"id": i + 1, "state": s} for i, s in enumerate(states)],
        "topics": [
            {
                "topic": "demo",
                "partitions": [{"partition": 0, "leader": leader, "leader_epoch": epoch, "isr": list(isr)}],
            }
        ],
        "groups": list(groups),
    }


def test_nothing_changed_says_nothing():
    assert changes(snap(), snap()) == []


def test_a_killed_leader():
    before = snap()
    after = snap(leader=2, epoch=1, isr=(2, 3), states=("dead", "alive", "alive"), controller=(2, 2))
    assert changes(before, after) == [
        "broker 1: alive -> dead",
        "controller: broker 2 (epoch 2), was broker 1 (epoch 1)",
        "demo/0: leader 1 -> 2, epoch 0 -> 1",
        "demo/0: ISR shrank to [2,3]",
    ]


def test_an_isolated_leader_is_told_as_the_cut_then_its_fencing_then_the_heal():
    cut = {"cuts": [[1, 2], [2, 1], [1, "clients"], ["clients", 1]], "cut_from_quorum": [1], "loss": {}}
    isolated = dict(snap(states=("isolated", "alive", "alive")), network_faults=cut)
    fenced = dict(
        snap(leader=2, epoch=1, isr=(2, 3), states=("isolated", "alive", "alive")), network_faults=cut
    )
    assert changes(snap(), isolated) == [
        "broker 1: alive -> isolated",
        "network: broker 1 and broker 2 cannot reach each other",
        "network: broker 1 and clients cannot reach each other",
        "network: broker 1 is cut off from the controller quorum",
    ]
    assert changes(isolated, fenced) == ["demo/0: leader 1 -> 2, epoch 0 -> 1", "demo/0: ISR shrank to [2,3]"]
    healed = snap(leader=2, epoch=1, isr=(2, 3, 1))
    assert changes(fenced, healed)[:4] == [
        "broker 1: isolated -> alive",
        "network: healed: broker 1 and broker 2 cannot reach each other",
        "network: healed: broker 1 and clients cannot reach each other",
        "network: healed: broker 1 is cut off from the controller quorum",
    ]


def test_network_faults_are_recorded_per_broker_for_the_reports_bands():
    doc = {"cuts": [[1, 3], ["clients", 1]], "cut_from_quorum": [1], "loss": {"2": 5}}
    assert network_faults(doc) == [
        {"broker": 1, "fault": "cut", "from": ["3", "clients", "controller"]},
        {"broker": 3, "fault": "cut", "from": ["1"]},
        {"broker": 2, "fault": "loss", "percent": 5},
    ]


def test_an_offline_partition_and_its_return():
    offline = snap(leader=-1, epoch=3, isr=(1,))
    assert changes(snap(epoch=2), offline)[0] == "demo/0: leader 1 -> none, epoch 2 -> 3"
    assert changes(offline, snap(epoch=4)) == [
        "demo/0: leader none -> 1, epoch 3 -> 4",
        "demo/0: ISR grew to [1,2,3]",
    ]


def test_an_unclean_election_is_told_with_the_isr_it_bypassed():
    offline = snap(leader=-1, epoch=3, isr=(1,))
    elected = snap(leader=2, epoch=4, isr=(2,))
    elected["topics"][0]["partitions"][0]["last_unclean_election"] = {"leader_epoch": 4, "isr": [1]}
    assert changes(offline, elected) == [
        "demo/0: leader none -> 2, epoch 3 -> 4",
        "demo/0: ISR changed to [2]",
        "demo/0: unclean election at epoch 4: broker 2 was not in the ISR [1]; records only [1] had are lost",
    ]
    assert changes(elected, elected) == []


def test_a_preferred_leader_back_on_the_imbalance_check_is_told_why():
    led_elsewhere = snap(leader=3, epoch=7)
    back = snap(leader=2, epoch=8)
    back["topics"][0]["partitions"][0]["last_leader_rebalance"] = {
        "leader_epoch": 8,
        "led": 0,
        "preferred": 4,
        "percentage": 10,
    }
    assert changes(led_elsewhere, back) == [
        "demo/0: leader 3 -> 2, epoch 7 -> 8: preferred leader back after the imbalance check "
        "(broker 2 led 0 of its 4 preferred partitions, 100% led elsewhere, above "
        "leader.imbalance.per.broker.percentage=10)"
    ]
    failover = snap(leader=3, epoch=9)
    failover["topics"][0]["partitions"][0]["last_leader_rebalance"] = {
        "leader_epoch": 8,
        "led": 0,
        "preferred": 4,
        "percentage": 10,
    }
    assert changes(back, failover) == ["demo/0: leader 2 -> 3, epoch 8 -> 9"]  # a later move


def test_a_rebalancing_group():
    stable = {"group": "g", "state": "Stable", "members": [{}, {}]}
    joining = {"group": "g", "state": "PreparingRebalance", "members": [{}, {}, {}]}
    assert changes(snap(groups=[stable]), snap(groups=[joining])) == [
        "group g: Stable -> PreparingRebalance",
        "group g: 2 -> 3 member(s)",
    ]
    unreadable = {"group": "g", "error": "coordinator not available"}
    assert changes(snap(groups=[stable]), snap(groups=[unreadable])) == []


def test_transactions_opening_and_ending():
    def with_txns(txns, lso):
        doc = snap()
        doc["topics"][0]["partitions"][0].update(open_transactions=txns, last_stable_offset=lso)
        return doc

    txn = {"producer_id": 1000, "producer_epoch": 2, "first_offset": 40}
    assert changes(with_txns([], 40), with_txns([txn], 40)) == [
        "demo/0: transaction opened by producer 1000 (epoch 2) at offset 40"
    ]
    assert changes(with_txns([txn], 40), with_txns([], 52)) == [
        "demo/0: transaction of producer 1000 from offset 40 ended (committed or aborted), "
        "last stable offset 52"
    ]
    assert changes(with_txns(None, None), with_txns(None, None)) == []  # brokers without transactions


def with_partition(**fields):
    doc = snap()
    doc["topics"][0]["partitions"][0].update(
        {
            "high_watermark": 100,
            "log_end_offsets": {"1": 120, "2": 100, "3": 120},
            "min_insync_replicas": 2,
            "high_watermark_waiting_ms": 0,
            **fields,
        }
    )
    return doc


def test_the_isr_crossing_min_insync_replicas():
    under = with_partition(isr=[1])
    assert changes(with_partition(isr=[1, 2]), under) == [
        "demo/0: ISR shrank to [1]",
        "demo/0: ISR of 1 < min.insync.replicas=2: acks=all produce refused (NOT_ENOUGH_REPLICAS)",
    ]
    assert changes(under, with_partition(isr=[1, 3])) == [
        "demo/0: ISR grew to [1,3]",
        "demo/0: ISR back to min.insync.replicas=2: acks=all accepted again",
    ]


def test_a_stalled_high_watermark_names_the_replicas_holding_it():
    stalled = with_partition(high_watermark_waiting_ms=2500)
    assert changes(with_partition(high_watermark_waiting_ms=600), stalled) == [
        "demo/0: high watermark stalled at 100 for 2.5s: in-sync replica(s) 2 not fetching"
    ]
    assert changes(stalled, stalled) == []
    assert changes(stalled, with_partition(high_watermark=120)) == [
        "demo/0: high watermark moving again, 100 -> 120"
    ]


def test_truncations_log_start_moves_and_a_fenced_controller():
    cut = {"from": 15, "to": 10, "leader_epoch": 4, "time_ms": 1}
    assert changes(with_partition(truncations={"1": None}), with_partition(truncations={"1": cut})) == [
        "demo/0: replica 1 truncated its log from 15 to 10: records the leader of epoch 4 does not have"
    ]
    assert changes(
        with_partition(log_start_offset=0),
        with_partition(log_start_offset=40, log_start_moved_by="retention"),
    ) == ["demo/0: log start 0 -> 40: retention.ms/retention.bytes deleted old segments"]
    fenced = dict(snap(), fenced_controller={"broker_id": 1, "epoch": 1, "current_epoch": 2, "time": 5})
    assert changes(snap(), fenced) == [
        "controller: broker 1 woke up with controller epoch 1, superseded by epoch 2: fenced, it resigned"
    ]
    assert changes(fenced, fenced) == []


def kip848(group_epoch, *members):
    """A KIP-848 group document: members as (id, epoch, assignment, target) with partitions of
    topic demo."""
    return {
        "group": "g",
        "state": "Stable",
        "type": "consumer",
        "group_epoch": group_epoch,
        "assignment_epoch": group_epoch,
        "members": [
            {
                "member_id": member_id,
                "member_epoch": epoch,
                "assignment": [{"topic": "demo", "partition": p} for p in owned],
                "target_assignment": [{"topic": "demo", "partition": p} for p in target],
            }
            for member_id, epoch, owned, target in members
        ],
        "partitions": [],
    }


def test_a_kip848_rebalance_is_told_step_by_step_with_member_epochs():
    alone = kip848(5, ("A", 5, [0, 1], [0, 1]))
    joined = kip848(6, ("A", 5, [0, 1], [0]), ("B", 6, [], [1]))
    revoked = kip848(6, ("A", 6, [0], [0]), ("B", 6, [], [1]))
    assigned = kip848(6, ("A", 6, [0], [0]), ("B", 6, [1], [1]))
    assert changes(snap(groups=[alone]), snap(groups=[joined])) == [
        "group g: member B joined at epoch 6",
        "group g: group epoch 5 -> 6",
        "group g: demo/1 to move to member B (target epoch 6) once member A revokes it",
    ]
    assert changes(snap(groups=[joined]), snap(groups=[revoked])) == [
        "group g: demo/1 revoked from member A at epoch 5"
    ]
    assert changes(snap(groups=[revoked]), snap(groups=[assigned])) == [
        "group g: demo/1 assigned to member B at epoch 6"
    ]
    left = kip848(7, ("B", 7, [1], [0, 1]))
    assert changes(snap(groups=[assigned]), snap(groups=[left])) == [
        "group g: member A left",
        "group g: group epoch 6 -> 7",
        "group g: demo/0 given up by departed member A at epoch 6",
    ]


def test_a_share_group_start_offset_moving_on_is_told():
    def share(start, members=("A",)):
        return {
            "group": "w",
            "state": "Stable",
            "type": "share",
            "group_epoch": len(members),
            "members": [{"member_id": m, "member_epoch": 1, "assignment": []} for m in members],
            "partitions": [{"topic": "demo", "partition": 0, "start_offset": start}],
        }

    assert changes(snap(groups=[share(3)]), snap(groups=[share(8, ("A", "B"))])) == [
        "group w: member B joined at epoch 1",
        "group w: group epoch 1 -> 2",
        "group w: demo/0 share start offset 3 -> 8: records below it acknowledged or archived",
    ]
    assert changes(snap(groups=[share(None)]), snap(groups=[share(8)])) == []


def test_an_isr_under_min_insync_replicas_as_the_leader_moves_is_told():
    """The new leader publishes min.insync.replicas a moment after its election."""
    before = with_partition(isr=[1, 2])
    elected = snap(leader=2, epoch=1, isr=(2,))
    assert "demo/0: ISR of 1 < min.insync.replicas=2: acks=all produce refused (NOT_ENOUGH_REPLICAS)" in (
        changes(before, elected)
    )
    published = with_partition(leader=2, leader_epoch=1, isr=[2])
    assert changes(elected, published) == []


def share_partition(leader_epoch=0, **counts):
    status = {
        "group": "workers",
        "topic": "jobs",
        "partition": 0,
        "leader_epoch": leader_epoch,
        "delivered": 0,
        "redelivered": 0,
        "released": 0,
        "rejected": 0,
        "archived": 0,
        "lock_expired": 0,
        "accepted": 0,
        "acquired": 0,
        "available": 0,
        "max_delivery_count": 0,
        "redelivered_at": {},
        "start_offset": 0,
        "end_offset": 0,
    }
    return {**snap(), "share_partitions": [{**status, **counts}]}


def test_share_partition_deliveries_releases_rejections_and_lock_expiries_are_told():
    first = share_partition(delivered=5, acquired=5, max_delivery_count=1, end_offset=5)
    assert changes(share_partition(), first) == ["group workers: jobs/0: 5 acquired; 5 in flight, 5 acquired"]
    second = share_partition(
        delivered=7,
        redelivered=2,
        redelivered_at={"2": 2},
        released=2,
        rejected=1,
        accepted=1,
        lock_expired=1,
        acquired=3,
        available=1,
        max_delivery_count=2,
        start_offset=1,
        end_offset=5,
    )
    assert changes(first, second) == [
        "group workers: jobs/0: 2 acquired, 2 of them acquired again (delivery count 2), 2 released, "
        "1 back after their acquisition lock expired, 1 rejected, 1 accepted; 4 in flight, 3 acquired"
    ]
    assert changes(second, second) == []
    archived = share_partition(**{**second["share_partitions"][0], "archived": 2, "released": 4})
    assert changes(second, archived) == [
        "group workers: jobs/0: 2 released, 2 archived at the delivery count limit; 4 in flight, 3 acquired"
    ]
    again = share_partition(**{**second["share_partitions"][0], "delivered": 10, "redelivered": 5})
    again["share_partitions"][0]["redelivered_at"] = {"2": 3, "3": 2}
    assert changes(second, again) == [
        "group workers: jobs/0: 3 acquired, 3 of them acquired again (delivery counts 2-3); "
        "4 in flight, 3 acquired"
    ]
    # a new leader counts from where it took over: its counts are told from zero, never as a drop
    moved = share_partition(leader_epoch=1, delivered=1, acquired=1, max_delivery_count=3)
    assert changes(second, moved) == ["group workers: jobs/0: 1 acquired; 1 in flight, 1 acquired"]


def test_a_recorded_cut_becomes_a_band_named_by_whom_it_cut_the_broker_off_from(tmp_path):
    cut = {"cuts": [[1, 2], [2, 1]], "cut_from_quorum": [1], "loss": {}}
    moments = [
        moment(dict(snap(), time=10.0), []),
        moment(dict(snap(states=("isolated", "alive", "alive")), time=11.0, network_faults=cut), []),
        moment(dict(snap(), time=15.0), []),
    ]
    built = recording.build(tmp_path, moments).faults
    bands = {(f.broker, f.kind): (f.start, f.end, f.detail) for f in built}
    assert bands[(1, "cut")] == (11.0, 15.0, "from 2, controller")
    assert bands[(2, "cut")] == (11.0, 15.0, "from 1")
    assert bands[(1, "isolated")][:2] == (11.0, 15.0)
    band = next(f for f in built if (f.broker, f.kind) == (1, "cut"))
    assert _fault_words(band) == " broker 1 cut off from 2, controller"

"""The narration `kctl watch` prints under its tables: what changed between two snapshots."""

from kctl.events import changes


def snap(leader=1, epoch=0, isr=(1, 2, 3), states=("alive", "alive", "alive"), controller=(1, 1),
         groups=()):
    return {
        "controller": {"broker_id": controller[0], "epoch": controller[1]},
        "brokers": [{"id": i + 1, "state": s} for i, s in enumerate(states)],
        "topics": [{"topic": "demo", "partitions": [
            {"partition": 0, "leader": leader, "leader_epoch": epoch, "isr": list(isr)}]}],
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


def test_an_offline_partition_and_its_return():
    offline = snap(leader=-1, epoch=3, isr=(1,))
    assert changes(snap(epoch=2), offline)[0] == "demo/0: leader 1 -> none, epoch 2 -> 3"
    assert changes(offline, snap(epoch=4)) == ["demo/0: leader none -> 1, epoch 3 -> 4",
                                               "demo/0: ISR grew to [1,2,3]"]


def test_a_rebalancing_group():
    stable = {"group": "g", "state": "Stable", "members": [{}, {}]}
    joining = {"group": "g", "state": "PreparingRebalance", "members": [{}, {}, {}]}
    assert changes(snap(groups=[stable]), snap(groups=[joining])) == [
        "group g: Stable -> PreparingRebalance", "group g: 2 -> 3 member(s)"]
    unreadable = {"group": "g", "error": "coordinator not available"}
    assert changes(snap(groups=[stable]), snap(groups=[unreadable])) == []


def test_transactions_opening_and_ending():
    def with_txns(txns, lso):
        doc = snap()
        doc["topics"][0]["partitions"][0].update(open_transactions=txns, last_stable_offset=lso)
        return doc
    txn = {"producer_id": 1000, "producer_epoch": 2, "first_offset": 40}
    assert changes(with_txns([], 40), with_txns([txn], 40)) == [
        "demo/0: transaction opened by producer 1000 (epoch 2) at offset 40"]
    assert changes(with_txns([txn], 40), with_txns([], 52)) == [
        "demo/0: transaction of producer 1000 from offset 40 ended (committed or aborted), last stable offset 52"]
    assert changes(with_txns(None, None), with_txns(None, None)) == []   # brokers without transactions

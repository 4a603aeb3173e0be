"""Offset planning as plain functions: micro-batch ends, read limits, task splitting."""

import itertools

import pytest

from kctl.spark.offsets import TopicPartition as TP
from kctl.spark.planning import DataLossError, OffsetRange, advance, limit, ranges, split

pytestmark = pytest.mark.unit

A0, A1, B0 = TP("a", 0), TP("a", 1), TP("b", 0)


def test_advance_goes_to_latest_and_registers_new_partitions_without_reading_them():
    end = advance({A0: 5}, {A0: 9, A1: 4, B0: 7}, {A1: 2, B0: 0}, None, True)
    assert end == {A0: 9, A1: 2, B0: 0}
    assert ranges({A0: 5}, end) == [OffsetRange("a", 0, 5, 9)]
    assert ranges(end, {A0: 9, A1: 4, B0: 7}) == [OffsetRange("a", 1, 2, 4), OffsetRange("b", 0, 0, 7)]


def test_available_now_cap_stops_at_the_offsets_of_the_start():
    cap = {A0: 8}
    assert advance({A0: 5}, {A0: 20}, {}, cap, True) == {A0: 8}
    assert advance({A0: 8}, {A0: 30}, {}, cap, True) == {A0: 8}  # the end: start == end
    assert advance({A0: 8, A1: 0}, {A0: 30, A1: 9}, {}, cap, True) == {A0: 8, A1: 0}  # not in the cap


def test_data_loss_fails_or_moves_on():
    with pytest.raises(DataLossError, match="a/1 no longer exists"):
        advance({A0: 1, A1: 1}, {A0: 1}, {}, None, True)
    with pytest.raises(DataLossError, match="went back from offset 9 to 3"):
        advance({A0: 9}, {A0: 3}, {}, None, True)
    assert advance({A0: 9, A1: 1}, {A0: 3}, {}, None, False) == {A0: 3}
    assert ranges({A0: 9}, {A0: 3}) == []


def test_limit_shares_in_proportion_and_never_exceeds():
    start = {A0: 0, A1: 100, B0: 0}
    end = {A0: 300, A1: 200, B0: 0}
    cut = limit(start, end, 40)
    assert cut == {A0: 30, A1: 110, B0: 0}
    assert limit(start, end, 1000) == end


@pytest.mark.parametrize(
    "waiting, budget", [((7, 7, 7), 10), ((1, 1, 1), 2), ((5, 0, 3), 7), ((10**9, 1, 1), 3)]
)
def test_limit_uses_the_whole_budget_and_is_deterministic(waiting, budget):
    tps = [TP("t", i) for i in range(len(waiting))]
    start = {tp: 10 for tp in tps}
    end = {tp: 10 + n for tp, n in zip(tps, waiting)}
    results = set()
    for order in itertools.permutations(tps):
        cut = limit({tp: start[tp] for tp in order}, {tp: end[tp] for tp in order}, budget)
        assert sum(cut[tp] - start[tp] for tp in tps) == min(budget, sum(waiting))
        assert all(start[tp] <= cut[tp] <= end[tp] for tp in tps)
        results.add(tuple(sorted(cut.items())))
    assert len(results) == 1


def test_split_honours_min_partitions_in_proportion():
    big, small = OffsetRange("a", 0, 0, 900), OffsetRange("a", 1, 0, 100)
    pieces = split([big, small], 10)
    assert [p for p in pieces if p.partition == 1] == [small]
    big_pieces = [p for p in pieces if p.partition == 0]
    assert len(big_pieces) == 9
    assert big_pieces[0].start == 0 and big_pieces[-1].end == 900
    assert all(a.end == b.start for a, b in zip(big_pieces, big_pieces[1:]))
    assert sum(p.size for p in pieces) == 1000


@pytest.mark.parametrize(
    "sizes, wanted", [((120, 120, 60), 6), ((1000, 1, 1), 5), ((7, 3), 9), ((5, 5, 5), 4)]
)
def test_split_yields_at_least_min_partitions_pieces(sizes, wanted):
    found = [OffsetRange("t", p, 100, 100 + n) for p, n in enumerate(sizes)]
    pieces = split(found, wanted)
    assert len(pieces) >= wanted and all(p.size > 0 for p in pieces)
    for p, n in enumerate(sizes):
        mine = [x for x in pieces if x.partition == p]
        assert mine[0].start == 100 and mine[-1].end == 100 + n
        assert all(a.end == b.start for a, b in zip(mine, mine[1:]))
        assert max(x.size for x in mine) - min(x.size for x in mine) <= 1


def test_split_never_makes_empty_pieces_or_splits_when_enough_tasks():
    assert split([OffsetRange("a", 0, 0, 3)], 10) == [OffsetRange("a", 0, i, i + 1) for i in range(3)]
    ranges_ = [OffsetRange("a", 0, 0, 50), OffsetRange("a", 1, 0, 50)]
    assert split(ranges_, 2) == ranges_ and split(ranges_, None) == ranges_

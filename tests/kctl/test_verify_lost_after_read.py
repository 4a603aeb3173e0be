"""`kctl verify`'s lost-after-read check on hand-made histories: a record a consumer read and
the final read no longer returned is an anomaly even when its write was never acknowledged
(lost-write only judges acknowledged ones); and the nemesis accepts the overlapping
kill-pause fault."""

from __future__ import annotations

import pytest

from kctl.verify import history, nemesis
from tests.kctl.test_verify_checker import H, failed, only

pytestmark = pytest.mark.unit


def unacknowledged(h: H, value: str, partition: int = 0) -> H:
    """A send whose delivery failed (timed out): indeterminate, it may have been written."""
    h.add("send", process="p0", value=value, partition=partition)
    return h.add("fail", process="p0", value=value, error="timed out")


def test_a_record_read_then_gone_from_the_final_read_is_lost_after_read():
    """The zombie leader's damage: b was read at 0/1 by the group, the partition was
    truncated under it, and the final read, reaching the end, has no b."""
    h = H().write("p0", "a", 0, 0)
    unacknowledged(h, "b")
    h.poll("c0", (0, 0, "a"), (0, 1, "b"))
    h.final((0, 0, "a"), ends={0: 1})
    assert "lost-write" not in failed(h.verdict())  # b was never acknowledged
    lost = only(h.verdict(), "lost-after-read")
    assert lost.examples == ("b read by c0 at 0/1, not in the final read",)


def test_a_record_read_and_still_there_or_not_reached_is_not_lost():
    h = H().write("p0", "a", 0, 0)
    unacknowledged(h, "b")
    unacknowledged(h, "c", partition=1)
    h.poll("c0", (0, 0, "a"), (0, 1, "b")).poll("c0", (1, 0, "c"))
    h.poll(history.FINAL, (0, 0, "a"), (0, 1, "b"))
    h.add("final", process=history.FINAL, ends={"0": 2, "1": 1}, reached={"0": True, "1": False})
    assert h.verdict().valid, failed(h.verdict())


def test_an_acknowledged_record_read_then_lost_is_reported_once_as_a_lost_write():
    h = H().write("p0", "a", 0, 0).write("p0", "b", 0, 1)
    h.poll("c0", (0, 0, "a"), (0, 1, "b"))
    h.final((0, 0, "a"), ends={0: 1})
    assert only(h.verdict(), "lost-write").count == 1


def test_kill_pause_is_a_nemesis_kind_on_request():
    assert nemesis.parse_kinds("kill-pause,pause") == ("kill-pause", "pause")
    assert "kill-pause" not in nemesis.DEFAULT_KINDS

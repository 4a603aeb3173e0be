"""The checker of `kctl verify` on hand-made histories: a clean history passes, and each
anomaly, planted alone, is found and named with an example. These are the tests that show
the checker can fail; `kctl verify check FILE` runs it on a file the same way."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kctl.main import app
from kctl.shell.exit_codes import ExitCode
from kctl.verify import checker, history

pytestmark = pytest.mark.unit


class H:
    """A history being written by hand, one line per call, with a clock that only advances."""

    def __init__(self, **meta):
        self.lines: list[dict] = [{"type": "meta", "version": 1, "topic": "t", "partitions": 2, **meta}]
        self.clock = 0.0

    def add(self, kind: str, **fields) -> H:
        self.clock += 0.01
        self.lines.append({"type": kind, "time": fields.pop("time", self.clock), **fields})
        return self

    def write(self, process: str, value: str, partition: int, offset: int, txn: str | None = None) -> H:
        self.add("send", process=process, value=value, partition=partition, txn=txn)
        return self.add("ack", process=process, value=value, partition=partition, offset=offset, txn=txn)

    def poll(self, process: str, *records, txn: str | None = None) -> H:
        return self.add("poll", process=process, records=[list(r) for r in records], txn=txn)

    def commit(self, process: str, **offsets) -> H:
        return self.add(
            "commit", process=process, offsets={k.lstrip("p"): v for k, v in offsets.items()}, error=None
        )

    def txn(self, name: str, outcome: str, process: str = "t0") -> H:
        return self.add("txn", process=process, txn=name, outcome=outcome, end=self.clock + 0.005)

    def final(self, *records, ends: dict[int, int]) -> H:
        if records:
            self.poll(history.FINAL, *records)
        return self.add(
            "final",
            process=history.FINAL,
            ends={str(p): e for p, e in ends.items()},
            reached={str(p): True for p in ends},
        )

    def text(self) -> str:
        return "".join(json.dumps(line) + "\n" for line in self.lines)

    def verdict(self) -> checker.Verdict:
        return checker.check(history.parse(self.text().splitlines()))


def clean() -> H:
    """Two producers, a group member that reads and commits, and a complete final read."""
    h = H()
    h.write("p0", "p0-0", 0, 0).write("p0", "p0-1", 1, 0).write("p1", "p1-0", 0, 1).write("p1", "p1-1", 1, 1)
    h.add("assign", process="c0", how="assigned", partitions=[0, 1])
    h.poll("c0", (0, 0, "p0-0"), (0, 1, "p1-0")).commit("c0", p0=2)
    h.poll("c0", (1, 0, "p0-1"), (1, 1, "p1-1")).commit("c0", p1=2)
    return h.final((0, 0, "p0-0"), (0, 1, "p1-0"), (1, 0, "p0-1"), (1, 1, "p1-1"), ends={0: 2, 1: 2})


def failed(verdict: checker.Verdict) -> dict[str, checker.CheckResult]:
    return {c.name: c for c in verdict.checks if c.failed}


def only(verdict: checker.Verdict, name: str) -> checker.CheckResult:
    found = failed(verdict)
    assert set(found) == {name}, {n: c.examples for n, c in found.items()}
    assert not verdict.valid
    return found[name]


def test_a_clean_history_is_valid():
    verdict = clean().verdict()
    assert verdict.valid, failed(verdict)
    assert verdict.stats["acknowledged"] == 4 and verdict.stats["final_read"] == 4
    assert {c.name for c in verdict.checks} >= {
        "lost-write",
        "unseen",
        "duplicate",
        "inconsistent-offsets",
        "skipped-by-commit",
        "aborted-read",
        "uncommitted-read",
        "torn-transaction",
        "G1c",
        "interleaved-cycles",
    }


def test_an_acknowledged_write_missing_from_the_final_read_is_lost():
    h = H().write("p0", "a", 0, 0).write("p0", "b", 0, 1).write("p0", "c", 0, 2)
    h.final((0, 0, "a"), (0, 2, "c"), ends={0: 3})
    lost = only(h.verdict(), "lost-write")
    assert lost.count == 1 and "b acked at 0/1" in lost.examples[0]


def test_a_failed_send_may_be_missing_and_may_be_read():
    """Without a transaction a failed delivery is indeterminate: neither outcome is an anomaly."""
    h = H().write("p0", "a", 0, 0)
    h.add("send", process="p0", value="b", partition=0).add(
        "fail", process="p0", value="b", error="timed out"
    )
    h.add("send", process="p0", value="c", partition=0).add(
        "fail", process="p0", value="c", error="timed out"
    )
    h.final((0, 0, "a"), (0, 1, "c"), ends={0: 2})
    assert h.verdict().valid


def test_a_write_no_read_reached_is_unseen():
    h = H().write("p0", "a", 0, 0).write("p0", "b", 0, 1)
    h.poll(history.FINAL, (0, 0, "a"))
    h.add("final", process=history.FINAL, ends={"0": 2}, reached={"0": False})
    assert "b acked at 0/1" in only(h.verdict(), "unseen").examples[0]


def test_a_value_at_two_offsets_is_a_duplicate():
    h = H().write("p0", "a", 0, 0).write("p0", "b", 0, 1)
    h.final((0, 0, "a"), (0, 1, "b"), (0, 2, "a"), ends={0: 3})
    assert only(h.verdict(), "duplicate").examples == ("a at 0/0, 0/2",)


def test_reads_that_disagree_about_an_offset_are_inconsistent():
    h = H().write("p0", "a", 0, 0).write("p1", "b", 0, 1)
    h.poll("c0", (0, 0, "a"), (0, 1, "b")).commit("c0", p0=2)
    h.final((0, 0, "a"), (0, 1, "x"), (0, 2, "b"), ends={0: 3})
    found = failed(h.verdict())
    assert "0/1 held b, x" in found["inconsistent-offsets"].examples
    assert "duplicate" in found  # b moved from 0/1 to 0/2: both anomalies are real


def test_records_below_a_commit_no_member_was_given_are_skipped():
    h = H().write("p0", "a", 0, 0).write("p0", "b", 0, 1).write("p0", "c", 0, 2)
    h.add("assign", process="c0", how="assigned", partitions=[0])
    h.poll("c0", (0, 0, "a")).commit("c0", p0=3)  # commits past b and c
    h.final((0, 0, "a"), (0, 1, "b"), (0, 2, "c"), ends={0: 3})
    skipped = only(h.verdict(), "skipped-by-commit")
    assert skipped.count == 2 and skipped.examples[0].startswith("b at 0/1")


def test_a_commit_that_failed_skips_nothing():
    h = H().write("p0", "a", 0, 0).write("p0", "b", 0, 1)
    h.poll("c0", (0, 0, "a"))
    h.add("commit", process="c0", offsets={"0": 2}, error="REBALANCE_IN_PROGRESS")
    h.final((0, 0, "a"), (0, 1, "b"), ends={0: 2})
    assert h.verdict().valid


def txn_history() -> H:
    """Two transactional writes: T0 commits a and b, T1 aborts c and d."""
    h = H(txn_writers=1)
    h.write("t0", "a", 0, 0, txn="T0").write("t0", "b", 1, 0, txn="T0").txn("T0", "committed")
    h.write("t0", "c", 0, 2, txn="T1").write("t0", "d", 1, 2, txn="T1").txn("T1", "aborted")
    return h


def test_transactions_read_as_committed_are_valid():
    h = txn_history().final((0, 0, "a"), (1, 0, "b"), ends={0: 4, 1: 4})
    verdict = h.verdict()
    assert verdict.valid, failed(verdict)
    assert verdict.stats["txn_committed"] == 1 and verdict.stats["txn_aborted"] == 1


def test_an_aborted_record_returned_to_read_committed_is_an_aborted_read():
    h = txn_history().poll("c0", (0, 0, "a"), (0, 2, "c"))
    h.final((0, 0, "a"), (1, 0, "b"), ends={0: 4, 1: 4})
    assert "c0 read c at 0/2 of aborted T1" in only(h.verdict(), "aborted-read").examples[0]


def test_a_record_returned_before_its_commit_was_asked_is_an_uncommitted_read():
    h = H()
    h.write("t0", "a", 0, 0, txn="T0").write("t0", "b", 1, 0, txn="T0")
    h.poll("c0", (0, 0, "a"))  # before the commit below
    h.txn("T0", "committed")
    h.final((0, 0, "a"), (1, 0, "b"), ends={0: 2, 1: 2})
    assert "c0 read a of T0" in only(h.verdict(), "uncommitted-read").examples[0]


def test_a_committed_transaction_read_in_part_is_torn():
    h = txn_history().final((0, 0, "a"), ends={0: 4, 1: 4})
    found = failed(h.verdict())
    assert set(found) == {"torn-transaction", "lost-write"}  # b was acknowledged, then lost
    assert found["torn-transaction"].examples == ("T0 (committed): read 1 of 2 writes, not b",)


def test_reading_a_transaction_then_writing_before_it_is_a_g1c_cycle():
    """T1 read T0's write to partition 0 (wr: T0 -> T1), yet T1's write to partition 1 is
    ahead of T0's there (ww: T1 -> T0): information flowed in a circle."""
    h = H()
    h.write("t0", "x0", 0, 0, txn="T0").write("t0", "x1", 1, 1, txn="T0").txn("T0", "committed", process="t0")
    h.poll("t1", (0, 0, "x0"), txn="T1")
    h.write("t1", "y1", 1, 0, txn="T1").txn("T1", "committed", process="t1")
    h.final((0, 0, "x0"), (1, 0, "y1"), (1, 1, "x1"), ends={0: 1, 1: 2})
    example = only(h.verdict(), "G1c").examples[0]
    assert "T0 commits -> T1 begins (wr: T1 read x0)" in example
    assert "T1 begins -> T0 commits (ww: y1 before x1)" in example


def interleaved(h: H) -> checker.CheckResult:
    verdict = h.verdict()
    assert verdict.valid, failed(verdict)
    return next(c for c in verdict.checks if c.name == "interleaved-cycles")


def test_a_cycle_of_writes_alone_is_g0_and_allowed():
    """T0 and T1 both write partitions 0 and 1, in opposite orders: Kafka allows that."""
    h = H()
    h.write("t0", "a0", 0, 0, txn="T0").write("t1", "b0", 0, 1, txn="T1")
    h.write("t1", "b1", 1, 0, txn="T1").write("t0", "a1", 1, 1, txn="T0")
    h.txn("T0", "committed", process="t0").txn("T1", "committed", process="t1")
    h.final((0, 0, "a0"), (0, 1, "b0"), (1, 0, "b1"), (1, 1, "a1"), ends={0: 2, 1: 2})
    cycles = interleaved(h)
    assert cycles.count == 1 and not cycles.bad


def test_a_read_in_a_cycle_a_long_transaction_explains_is_allowed():
    """T2 writes partition 2 early and partition 1 late; meanwhile T0 commits and T1 reads it.
    Jepsen's graph has the cycle T0 -wr-> T1 -ww-> T2 -ww-> T0, but every edge holds in time."""
    h = H()
    h.write("t2", "w0", 2, 0, txn="T2")
    h.write("t0", "x0", 0, 0, txn="T0").write("t0", "x1", 2, 1, txn="T0").txn("T0", "committed", process="t0")
    h.poll("t1", (0, 0, "x0"), txn="T1")
    h.write("t1", "y0", 1, 0, txn="T1").txn("T1", "committed", process="t1")
    h.write("t2", "w1", 1, 1, txn="T2").txn("T2", "committed", process="t2")
    h.final((0, 0, "x0"), (1, 0, "y0"), (1, 1, "w1"), (2, 0, "w0"), (2, 1, "x1"), ends={0: 1, 1: 2, 2: 2})
    assert interleaved(h).count == 1


def test_a_process_order_closes_a_cycle():
    """t0 ran T0 then T1; T1's write is ahead of T0's in partition 0: impossible."""
    h = H()
    h.write("t0", "a", 0, 1, txn="T0").txn("T0", "committed", process="t0")
    h.write("t0", "b", 0, 0, txn="T1").txn("T1", "committed", process="t0")
    h.final((0, 0, "b"), (0, 1, "a"), ends={0: 2})
    found = failed(h.verdict())
    assert "process t0: then T1" in found["G1c"].examples[0]


def test_a_producer_whose_later_write_lands_lower_is_nonmonotonic():
    h = H().write("p0", "a", 0, 1).write("p0", "b", 0, 0)
    h.final((0, 0, "b"), (0, 1, "a"), ends={0: 2})
    assert "b at 0/0 after a at 0/1" in only(h.verdict(), "nonmonotonic-send").examples[0]


def test_a_reader_going_back_or_jumping_ahead_without_a_rebalance():
    h = H().write("p0", "a", 0, 0).write("p0", "b", 0, 1).write("p0", "c", 0, 2)
    h.add("assign", process="c0", how="assigned", partitions=[0])
    h.poll("c0", (0, 0, "a"), (0, 2, "c"))  # skips b
    h.poll("c0", (0, 1, "b"))  # and goes back for it
    h.final((0, 0, "a"), (0, 1, "b"), (0, 2, "c"), ends={0: 3})
    found = failed(h.verdict())
    assert set(found) == {"poll-skip", "nonmonotonic-poll"}
    assert found["poll-skip"].examples == ("c0: 0/0 -> 0/2, 1 record(s) skipped",)


def test_a_rebalance_lets_a_reader_start_again():
    h = H().write("p0", "a", 0, 0).write("p0", "b", 0, 1)
    h.add("assign", process="c0", how="assigned", partitions=[0])
    h.poll("c0", (0, 0, "a"), (0, 1, "b"))
    h.add("assign", process="c0", how="revoked", partitions=[0])
    h.add("assign", process="c0", how="assigned", partitions=[0])
    h.poll("c0", (0, 1, "b"))  # from the committed offset again: allowed after a rebalance
    h.final((0, 0, "a"), (0, 1, "b"), ends={0: 2})
    assert h.verdict().valid


def test_a_garbled_history_is_refused_with_its_line_number(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text(clean().text() + '{"type": "ack", "time": 1}\n')
    result = CliRunner().invoke(app, ["verify", "check", str(path)])
    assert result.exit_code == ExitCode.INVALID_INPUT
    assert "not a kctl verify history: line" in result.stderr


@pytest.mark.parametrize("valid", [True, False])
def test_verify_check_prints_the_verdict_and_exits_11_on_anomalies(tmp_path, valid):
    h = (
        clean()
        if valid
        else H().write("p0", "a", 0, 0).write("p0", "b", 0, 1).final((0, 1, "b"), ends={0: 2})
    )
    path = tmp_path / "h.jsonl"
    path.write_text(h.text())
    result = CliRunner().invoke(app, ["verify", "check", str(path)], env={"NO_COLOR": "1"})
    assert result.exit_code == (ExitCode.OK if valid else ExitCode.ANOMALIES), result.output
    assert ("valid: no anomalies" if valid else "INVALID: 1 anomalies") in result.stdout
    doc = json.loads(CliRunner().invoke(app, ["verify", "check", str(path), "--json"]).stdout)
    assert doc["valid"] is valid
    lost = next(c for c in doc["checks"] if c["check"] == "lost-write")
    assert lost["count"] == (0 if valid else 1)
    assert valid or lost["examples"] == ["a acked at 0/0, not in the final read"]


def test_a_write_beyond_where_the_partition_now_ends_is_lost():
    """The final read got to the end, and the end is now below an acknowledged offset: the
    log was cut back (truncated) under the write."""
    h = H().write("p0", "a", 0, 0).write("p0", "b", 0, 1).write("p0", "c", 0, 2)
    h.final((0, 0, "a"), ends={0: 1})
    lost = only(h.verdict(), "lost-write")
    assert (
        lost.count == 2
        and lost.examples[0] == "b acked at 0/1, not in the final read (the partition now ends at 1)"
    )


def test_without_idempotence_duplicates_and_reordering_are_allowed():
    h = H(idempotence=False).write("p0", "a", 0, 1).write("p0", "b", 0, 0)
    h.final((0, 0, "b"), (0, 1, "a"), (0, 2, "a"), ends={0: 3})
    verdict = h.verdict()
    assert verdict.valid, failed(verdict)
    allowed = {c.name: c.count for c in verdict.checks if not c.bad}
    assert allowed["duplicate"] == 1 and allowed["nonmonotonic-send"] == 1


def test_an_ack_without_an_offset_still_counts_as_acknowledged():
    """librdkafka reports a retried write the broker recognised as a duplicate as delivered,
    with no offset: it must still be read back."""
    h = H().write("p0", "a", 0, 0)
    h.add("send", process="p0", value="b", partition=0).add(
        "ack", process="p0", value="b", partition=0, offset=None
    )
    assert h.final((0, 0, "a"), (0, 1, "b"), ends={0: 2}).verdict().valid
    h = H().write("p0", "a", 0, 0)
    h.add("send", process="p0", value="b", partition=0).add(
        "ack", process="p0", value="b", partition=0, offset=None
    )
    lost = only(h.final((0, 0, "a"), ends={0: 1}).verdict(), "lost-write")
    assert lost.examples == ("b acked at 0 (offset not reported), not in the final read",)

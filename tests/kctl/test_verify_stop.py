"""`kctl verify` ends even when a Kafka client call never returns: librdkafka's synchronous
commit waits for a group coordinator that may never come back (a broker the nemesis could not
start again led its partition alone), and its close has no timeout either. Such a client is
left behind after a bound derived from the run's own timeouts and reported; the final read is
bounded the same way."""

from __future__ import annotations

import threading
import time

import pytest

from kctl.verify import workload
from kctl.verify.history import FINAL, HistoryWriter

pytestmark = pytest.mark.unit

PLAN = workload.Plan(
    topic="t", partitions=3, group="g", producers=0, consumers=0, txn_writers=0, rate=1, txn_rate=1
)


class NeverReturns(workload.Worker):
    """A client thread blocked in a call that ignores the run's stop, as a synchronous commit
    to a coordinator that is gone for good is."""

    def __init__(self, name: str, stop: threading.Event, forever: threading.Event):
        super().__init__(name, stop)
        self.forever = forever

    def work(self) -> None:
        self.forever.wait()


class Fails(workload.Worker):
    def work(self) -> None:
        raise RuntimeError("fenced")


class StuckConnection:
    """A connection whose consumer is never made: the final read's client never returns."""

    def __init__(self, forever: threading.Event):
        self.forever = forever

    def consumer(self, defaults: dict) -> None:
        self.forever.wait()


@pytest.fixture
def forever():
    event = threading.Event()
    yield event
    event.set()  # lets the threads left behind end with the test


def test_a_group_member_that_never_returns_is_left_behind_and_reported(tmp_path, forever):
    history = HistoryWriter.open(tmp_path / "h.jsonl")
    load = workload.Workload(None, PLAN, history)  # type: ignore[arg-type]  # no client is made
    load.writers = [Fails("p0", load.stop_writing)]
    load.readers = [NeverReturns("c0", load.stop_reading, forever), Fails("c1", load.stop_reading)]
    load.writers_stop_timeout_s = load.group_stop_timeout_s = 0.5
    load.start()
    started = time.monotonic()
    errors = load.stop()
    assert time.monotonic() - started < 5
    assert set(errors) == {"p0", "c0", "c1"}
    assert "did not end within 0.5s" in str(errors["c0"]) and "left behind" in str(errors["c0"])
    assert str(errors["p0"]) == str(errors["c1"]) == "fenced"
    history.close()


def test_a_final_read_whose_client_never_returns_ends_with_none(tmp_path, forever, monkeypatch):
    monkeypatch.setattr(workload, "CLOSE_TIMEOUT_S", 0.3)
    history = HistoryWriter.open(tmp_path / "h.jsonl")
    load = workload.Workload(StuckConnection(forever), PLAN, history)  # type: ignore[arg-type]
    started = time.monotonic()
    assert load.final_read(0.2) is None
    assert time.monotonic() - started < 5
    history.close()
    assert FINAL not in (tmp_path / "h.jsonl").read_text()

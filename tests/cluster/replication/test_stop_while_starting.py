"""A broker asked to stop (SIGTERM) while it starts: it registers, and so can be given
leaderships, before it has finished starting; it must finish, hand over and stop cleanly,
not die of the signal's default action with its leaderships unmoved."""

import signal

import pytest

from tests.cluster_harness import wait_until

pytestmark = pytest.mark.cluster


def test_sigterm_as_soon_as_a_broker_registers_stops_it_cleanly(cluster_factory):
    cluster = cluster_factory(1, start=False)
    cluster.spawn(1)
    proc = cluster.procs[1]
    wait_until(lambda: any(r.broker_id == 1 for r in cluster.state.brokers()), 15, "the registration", 0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    log = (cluster.state.broker_dir(1) / "broker.log").read_text()
    assert "broker 1 stopping: SIGTERM received" in log
    assert "broker 1 stopped" in log

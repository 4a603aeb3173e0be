"""Broker settings kctl remembers per cluster, and how a broker's registration reads."""

import pytest

from brokerd.state import BrokerRegistration
from kctl.cluster import brokerconfig
from kctl.cluster.brokerview import state_of
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

pytestmark = pytest.mark.unit


def test_settings_are_checked_remembered_and_defaulted(tmp_path):
    settings = brokerconfig.parse(["broker.session.timeout.ms=1500", "num.partitions=3"])
    brokerconfig.remember(tmp_path, settings)
    assert brokerconfig.remembered(tmp_path) == settings
    assert brokerconfig.session_timeout_s(tmp_path) == 1.5
    assert brokerconfig.effective(settings, 5)["default.replication.factor"] == "3"
    assert brokerconfig.effective(settings, 2)["default.replication.factor"] == "2"
    assert "default.replication.factor" not in brokerconfig.effective(settings, 1)
    assert brokerconfig.effective({"default.replication.factor": "1"}, 3) == {
        "default.replication.factor": "1"
    }
    assert brokerconfig.remembered(tmp_path / "elsewhere") == {}


@pytest.mark.parametrize("item", ["nope=1", "num.partitions=many", "num.partitions"])
def test_bad_settings_are_invalid_input(item):
    with pytest.raises(KctlError) as err:
        brokerconfig.parse([item])
    assert err.value.code == ExitCode.INVALID_INPUT


def test_a_damaged_settings_file_says_where_it_is(tmp_path):
    (tmp_path / brokerconfig.FILE_NAME).write_text("{")
    with pytest.raises(KctlError, match="kctl.json"):
        brokerconfig.remembered(tmp_path)


@pytest.mark.parametrize(
    "alive, heartbeat_age, shutting_down, expected",
    [
        (False, 0.1, False, "dead"),
        (True, 0.1, False, "alive"),
        (True, 5.0, False, "paused"),
        (True, 0.1, True, "shutting-down"),
    ],
)
def test_broker_states(alive, heartbeat_age, shutting_down, expected):
    reg = BrokerRegistration(1, "127.0.0.1", 9092, 123, 0.0, shutting_down, alive, 1000.0 - heartbeat_age)
    assert state_of(reg, 3.0, now=1000.0) == expected
    assert state_of(None, 3.0, now=1000.0) == "dead"

import pytest
from kafka.errors import InvalidTimestampError

from brokerd.storage.log_config import LogConfig
from brokerd.storage.log_validator import validate_client_batch, validate_timestamps
from tests.brokerd.storage.conftest import make_batch

pytestmark = pytest.mark.unit

NOW = 10_000_000


def _validate(configs: dict[str, str], timestamp: int, count: int = 3) -> None:
    header = validate_client_batch(make_batch(count, timestamp=timestamp), 1 << 20)
    validate_timestamps(header, LogConfig.from_configs(configs), NOW)


def test_by_default_any_timestamp_is_accepted():
    _validate({}, 0)
    _validate({}, 2**62)


@pytest.mark.parametrize("timestamp", [NOW - 1000, NOW + 1000 - 2])  # records stamped t, t+1, t+2
def test_timestamps_at_the_bounds_are_accepted(timestamp):
    _validate(
        {"message.timestamp.before.max.ms": "1000", "message.timestamp.after.max.ms": "1000"}, timestamp
    )


def test_a_batch_older_than_before_max_is_refused():
    with pytest.raises(InvalidTimestampError, match=f"should be within \\[{NOW - 1000}, "):
        _validate({"message.timestamp.before.max.ms": "1000"}, NOW - 1001)


def test_a_batch_whose_max_timestamp_is_past_after_max_is_refused():
    with pytest.raises(InvalidTimestampError):
        _validate({"message.timestamp.after.max.ms": "1000"}, NOW + 1000 - 1)  # last record at NOW+1001


def test_the_deprecated_difference_bounds_both_sides_unless_overridden():
    difference = {"message.timestamp.difference.max.ms": "1000"}
    for timestamp in (NOW - 1001, NOW + 1001):
        with pytest.raises(InvalidTimestampError):
            _validate(difference, timestamp, count=1)
    _validate({**difference, "message.timestamp.before.max.ms": "5000"}, NOW - 4000, count=1)


def test_log_append_time_topics_do_not_check_producer_timestamps():
    _validate({"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": "0"}, 0)

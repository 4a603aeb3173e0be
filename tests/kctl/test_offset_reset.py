"""`kctl group reset-offsets` strategies, kept inside [log start, high watermark]."""

import pytest

from kctl.group.offsetreset import Current, Kind, Strategy, choose, new_offset
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

pytestmark = pytest.mark.unit

NOW_MS = 1_700_000_000_000
PART = Current("t", 0, committed=40, log_start=10, high_watermark=100, time_offset=55)


@pytest.mark.parametrize(
    "strategy, expected",
    [
        (Strategy(Kind.EARLIEST), 10),
        (Strategy(Kind.LATEST), 100),
        (Strategy(Kind.OFFSET, 50), 50),
        (Strategy(Kind.OFFSET, 5), 10),
        (Strategy(Kind.OFFSET, 500), 100),
        (Strategy(Kind.SHIFT, -25), 15),
        (Strategy(Kind.SHIFT, -35), 10),
        (Strategy(Kind.SHIFT, 70), 100),
        (Strategy(Kind.DATETIME, NOW_MS), 55),
    ],
)
def test_strategies(strategy, expected):
    assert new_offset(strategy, PART) == expected


def test_a_time_after_the_last_record_is_the_end():
    assert new_offset(Strategy(Kind.DATETIME, NOW_MS), Current("t", 0, None, 0, 9, time_offset=-1)) == 9


def test_shifting_needs_a_committed_offset():
    with pytest.raises(KctlError) as err:
        new_offset(Strategy(Kind.SHIFT, 1), Current("t", 3, None, 0, 9))
    assert err.value.code == ExitCode.INVALID_INPUT and "t/3" in err.value.message


def test_exactly_one_strategy():
    assert choose(False, False, None, -3, None, NOW_MS) == Strategy(Kind.SHIFT, -3)
    assert choose(False, False, None, None, "-1m", NOW_MS) == Strategy(Kind.DATETIME, NOW_MS - 60_000)
    assert choose(False, False, None, None, "2024-01-01", NOW_MS).value == 1_704_067_200_000
    for args in [
        (False, False, None, None, None),
        (True, True, None, None, None),
        (True, False, 3, None, None),
    ]:
        with pytest.raises(KctlError) as err:
            choose(*args, NOW_MS)
        assert err.value.code == ExitCode.USAGE

"""`kctl produce --rate`: records go out at the asked rate (paced per batch by a token bucket),
in order, and a rate that is not a number of records per second is refused."""

import pytest

from kctl.produce.pacing import batch_size, parse_rate
from kctl.shell.exit_codes import ExitCode
from tests.kctl.cli import run_kctl
from tests.kctl.local import kctl_in

pytestmark = pytest.mark.timeout(120)


@pytest.mark.cluster
def test_200_records_at_100_per_second_take_two_seconds_in_order(cluster):
    kctl_in(cluster.dir, "topic", "create", "paced", "-p", "1")
    kctl_in(cluster.dir, "produce", "paced", "--rate", "100/s", input="".join(f"r{i}\n" for i in range(200)))
    consumed = kctl_in(cluster.dir, "consume", "paced", "-o", "start", "-e", "-f", "%T %s\\n").stdout.decode()
    stamps, values = zip(*(line.split() for line in consumed.splitlines()))
    assert list(values) == [f"r{i}" for i in range(200)]
    span_s = (int(stamps[-1]) - int(stamps[0])) / 1000  # create times: when each was sent
    assert 1.8 <= span_s < 4, span_s


@pytest.mark.unit
def test_rates_and_batches():
    assert parse_rate("100/s") == parse_rate("100") == parse_rate(" 100 / S ") == 100
    assert parse_rate("0.5/s") == 0.5
    assert [batch_size(r) for r in (0.5, 20, 100, 1000, 10_000)] == [1, 1, 4, 32, 256]


@pytest.mark.cluster
@pytest.mark.parametrize("rate", ["0", "-5", "fast", "10/m", ""])
def test_a_bad_rate_is_refused_before_connecting(rate, isolated_env):
    result = run_kctl("produce", "t", "--rate", rate, "-b", "127.0.0.1:1", env=isolated_env, input="x\n")
    assert result.returncode == ExitCode.INVALID_INPUT
    assert (
        result.stderr
        == f"kctl: error: invalid --rate {rate!r}: expected records per second, e.g. 100/s or 100\n"
    )

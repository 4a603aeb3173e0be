"""The arithmetic behind `kctl bench` summaries."""

import pytest

from kctl.bench.figures import latency_summary, rates

pytestmark = pytest.mark.unit


def test_latency_percentiles_by_nearest_rank():
    summary = latency_summary([i / 1000 for i in range(1, 101)])  # 1..100 ms
    assert summary == {"avg": 50.5, "p50": 51.0, "p95": 96.0, "p99": 100.0, "p999": 100.0, "max": 100.0}


def test_no_latencies_means_no_figures():
    assert set(latency_summary([]).values()) == {None}


def test_rates_in_records_and_mib_per_second():
    assert rates(1000, 2 * 1024 * 1024, 2.0) == {"elapsed_s": 2.0, "records_per_s": 500.0, "mb_per_s": 1.0}

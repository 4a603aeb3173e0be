"""The figures `kctl bench` reports, as Kafka's perf-test tools count them: rates over the
elapsed time, and latency percentiles. Plain arithmetic, shared with kctl.spark.bench."""

from __future__ import annotations

MIB = 1024 * 1024


def rates(records: int, nbytes: int, elapsed: float) -> dict:
    """Elapsed seconds, records per second and MB per second (of 1024 * 1024 bytes, as the
    perf-test tools count them)."""
    elapsed = max(elapsed, 1e-9)
    return {
        "elapsed_s": round(elapsed, 3),
        "records_per_s": round(records / elapsed, 1),
        "mb_per_s": round(nbytes / MIB / elapsed, 3),
    }


def latency_summary(latencies_s: list[float]) -> dict:
    """avg/p50/p95/p99/p999/max in ms, by nearest rank over the sorted latencies."""
    if not latencies_s:
        return {k: None for k in ("avg", "p50", "p95", "p99", "p999", "max")}
    ordered = sorted(latencies_s)

    def rank(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)

    return {
        "avg": round(sum(ordered) / len(ordered) * 1000, 2),
        "p50": rank(0.5),
        "p95": rank(0.95),
        "p99": rank(0.99),
        "p999": rank(0.999),
        "max": round(ordered[-1] * 1000, 2),
    }

"""The suite's speed tiers, kept honest.

Every test is in exactly one of `unit`, `cluster`, `spark` and `slow` (registered in
pyproject.toml), so that `scripts/test --quick` can run every unit test and nothing else
slow. A test in no tier or in two stops the run before anything executes, whatever `-m`
selects, so a new module cannot slip in unmarked. A `unit` test that starts a broker (a
process or one forked by the cluster harness), a kctl process or a JVM fails: that is what
the other tiers are for.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence

import pytest

from tests import cluster_harness

SPEED_TIERS = ("unit", "cluster", "spark", "slow")

# argv words that mean a process of another tier: a broker, the CLI (which starts or
# dials brokers) or Spark's JVM.
_OTHER_TIER_PROGRAMS = ("brokerd", "kctl", "java", "spark-submit")


def tiers_of(item: pytest.Item) -> list[str]:
    """The speed tiers an item is marked with (module, class and function marks together)."""
    return sorted({mark.name for mark in item.iter_markers() if mark.name in SPEED_TIERS})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse the run when any collected test is in no speed tier or in several; runs before
    `-m` deselects anything, so a quick run catches a slow test left unmarked."""
    wrong = [f"{item.nodeid}: {tiers_of(item) or 'no tier'}" for item in items if len(tiers_of(item)) != 1]
    if wrong:
        listed = "\n  ".join(wrong)
        raise pytest.UsageError(
            f"{len(wrong)} test(s) not in exactly one speed tier {SPEED_TIERS}; mark each "
            f"module (pytestmark) or test with one:\n  {listed}"
        )


def _starts_other_tier(args: object) -> str | None:
    """The program an argv starts if it belongs to a tier other than `unit`."""
    words = [args] if isinstance(args, str | bytes) else list(args) if isinstance(args, Sequence) else []
    for word in (str(w) for w in words):
        name = word.rsplit("/", 1)[-1]
        if name in _OTHER_TIER_PROGRAMS or any(name == f"{p}.main" for p in _OTHER_TIER_PROGRAMS):
            return word
    return None


@pytest.fixture(autouse=True)
def unit_tests_stay_in_process(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Fail a `unit` test that starts a broker, kctl or Spark instead of letting it be slow."""
    if request.node.get_closest_marker("unit") is not None:
        original = subprocess.Popen.__init__

        def refuse_brokers(*args: object, **kwargs: object) -> None:
            pytest.fail("a unit test started a broker: mark it cluster or slow")

        monkeypatch.setattr(cluster_harness.BrokerProcess, "__init__", refuse_brokers)

        def refuse_other_tiers(self: subprocess.Popen, args: object, *rest: object, **kwargs: object) -> None:
            program = _starts_other_tier(args)
            if program is not None:
                pytest.fail(f"a unit test started {program!r}: mark it cluster, spark or slow")
            original(self, args, *rest, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(subprocess.Popen, "__init__", refuse_other_tiers)
    yield

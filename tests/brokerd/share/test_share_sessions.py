"""Share sessions (KIP-932) in-process: epoch 0 opens, the next epoch continues, a wrong one
is INVALID_SHARE_SESSION_EPOCH, none at all SHARE_SESSION_NOT_FOUND; the cache is bounded
and makes room only by evicting an idle session."""

from __future__ import annotations

import pytest
from kafka.errors import InvalidShareSessionEpochError, ShareSessionNotFoundError

from brokerd.share.share_sessions import ShareSessionCache, ShareSessionLimitReachedError

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_epochs_open_continue_and_are_checked() -> None:
    cache = ShareSessionCache(10)
    session, replaced = cache.open("g", "m")
    assert (session.epoch, replaced) == (1, None)
    assert cache.use("g", "m", 1) is session
    assert cache.use("g", "m", 2) is session
    with pytest.raises(InvalidShareSessionEpochError):
        cache.use("g", "m", 2)
    with pytest.raises(ShareSessionNotFoundError):
        cache.use("g", "other", 1)
    assert cache.use("g", "m", -1) is session  # the final request finds it; the caller closes it
    assert cache.close("g", "m") is session
    with pytest.raises(ShareSessionNotFoundError):
        cache.use("g", "m", 3)


def test_opening_again_replaces_the_session() -> None:
    cache = ShareSessionCache(10)
    first, _ = cache.open("g", "m")
    second, replaced = cache.open("g", "m")
    assert replaced is first and second.epoch == 1 and len(cache) == 1


def test_a_full_cache_evicts_only_an_idle_session() -> None:
    clock = Clock()
    cache = ShareSessionCache(1, idle_eviction_s=60, clock=clock)
    cache.open("g", "a")
    clock.now = 30
    with pytest.raises(ShareSessionLimitReachedError):
        cache.open("g", "b")
    clock.now = 61
    cache.open("g", "b")
    assert cache.get("g", "a") is None and cache.get("g", "b") is not None

"""Client quota resolution, rate measurement and throttle times (brokerd.quotas), in-process."""

import pytest

from brokerd.quotas import (
    ClientQuotaManager,
    ClientQuotas,
    QuotaEntityError,
    candidates,
    validate,
)

pytestmark = pytest.mark.unit


def quota(rate, user=..., client=...):
    entity = {}
    if user is not ...:
        entity["user"] = user
    if client is not ...:
        entity["client-id"] = client
    return {"entity": entity, "values": {"producer_byte_rate": rate}}


def manager(*entries):
    m = ClientQuotaManager("producer_byte_rate")
    m.set_quotas(list(entries))
    return m


def test_precedence_follows_kafka():
    every = [
        quota(1, "alice", "app"),
        quota(2, "alice", None),
        quota(3, "alice"),
        quota(4, None, "app"),
        quota(5, None, None),
        quota(6, None),
        quota(7, client="app"),
        quota(8, client=None),
    ]
    for present in range(len(every)):
        m = manager(*every[present:])
        assert m.quota_for("alice", "app")[1] == present + 1
    assert len(candidates("alice", "app")) == 8


def test_no_quota_means_no_throttle_and_nothing_measured():
    m = manager(quota(1000, "bob"))
    assert m.quota_for("alice", "app") is None
    assert m.record("alice", "app", 10**9, now_ms=0) == 0
    assert not manager().active


def test_user_quota_is_shared_by_its_client_ids_and_default_is_per_client():
    m = manager(quota(100, "alice"), quota(100, client=None))
    assert m.quota_for("alice", "a")[0] == m.quota_for("alice", "b")[0] == ("alice", "")
    assert m.quota_for("bob", "a")[0] != m.quota_for("bob", "b")[0]


def test_throttle_time_is_the_wait_to_fall_back_under_the_quota():
    m = manager(quota(1000, client="app"))
    # a young window counts as 10 s: 10,000 bytes at once are exactly the quota
    assert m.record("u", "app", 10_000, now_ms=0) == 0
    # 5,000 more: 15,000 bytes over 10 s is 1,500 B/s, (1500 - 1000) / 1000 * 10 s = 5 s
    assert m.record("u", "app", 5_000, now_ms=0) == 5000
    # another client id is measured apart and has no quota
    assert m.record("u", "other", 10**6, now_ms=0) == 0


def test_throttle_is_capped_at_the_whole_window():
    m = manager(quota(10, client="app"))
    assert m.record("u", "app", 10**9, now_ms=0) == 11_000


def test_old_windows_leave_the_measurement():
    m = manager(quota(1000, client="app"))
    assert m.record("u", "app", 15_000, now_ms=0) > 0
    # 11 windows later the burst no longer counts
    assert m.record("u", "app", 100, now_ms=11_000) == 0


def test_steady_rate_under_quota_is_never_throttled():
    m = manager(quota(1000, client="app"))
    assert all(m.record("u", "app", 90, now_ms=t * 100) == 0 for t in range(300))


def test_zero_quota_throttles_fully():
    m = manager(quota(0, client="app"))
    assert m.record("u", "app", 1, now_ms=0) == 11_000


def test_changed_quota_is_taken_up_on_refresh():
    stored = {"version": 1, "entries": [quota(1000, client="app")]}
    quotas = ClientQuotas(lambda: stored["version"], lambda: stored["entries"])
    quotas.refresh(now=0)
    assert quotas.produce.quota_for("u", "app")[1] == 1000
    assert not quotas.fetch.active
    stored.update(version=2, entries=[quota(5, client="app")])
    quotas.refresh(now=0.05)  # checked at most every 100 ms
    assert quotas.produce.quota_for("u", "app")[1] == 1000
    quotas.refresh(now=0.2)
    assert quotas.produce.quota_for("u", "app")[1] == 5
    stored.update(version=None, entries=[])
    quotas.refresh(now=0.4)
    assert not quotas.produce.active


@pytest.mark.parametrize(
    "entity, ops, message",
    [
        ({}, [], "Invalid empty client quota entity"),
        ({"group": "g"}, [], "Unhandled client quota entity type: group"),
        ({"user": ""}, [], "Empty user not supported"),
        (
            {"user": "a", "ip": None},
            [],
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
        ),
        ({"user": "a"}, [("bogus", 1.0, False)], "Invalid configuration key bogus"),
        (
            {"user": "a"},
            [("producer_byte_rate", 1.5, False)],
            "Configuration producer_byte_rate must be a Long value",
        ),
        (
            {"user": "a"},
            [("producer_byte_rate", -1.0, False)],
            "Configuration producer_byte_rate must be non-negative, not -1",
        ),
        (
            {"client-id": "c"},
            [("connection_creation_rate", 1.0, False)],
            "Invalid configuration key connection_creation_rate",
        ),
    ],
)
def test_validation_in_kafkas_words(entity, ops, message):
    with pytest.raises(QuotaEntityError, match=f"^{message}$"):
        validate(entity, ops)


def test_valid_entities_and_removals():
    validate(
        {"user": None, "client-id": "c"},
        [
            ("producer_byte_rate", 1024.0, False),
            ("request_percentage", 12.5, False),
            ("consumer_byte_rate", 0.0, True),
        ],
    )
    validate({"ip": None}, [("connection_creation_rate", 10.0, False)])

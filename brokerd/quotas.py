"""Client quotas (KIP-13, KIP-55, KIP-219): byte rates per user principal and client id.

A quota belongs to an entity: a user, a client id, or both, where either may be the
`<default>` one (None here, null on the wire). A client (user U, client id C) takes the
first quota that exists in Kafka's order of precedence:

    /users/U/clients/C, /users/U/clients/<default>, /users/U,
    /users/<default>/clients/C, /users/<default>/clients/<default>, /users/<default>,
    /clients/C, /clients/<default>

and shares its measured rate with every client that resolves to the same entity: all of
U's client ids share a quota set on /users/U, while a quota on /clients/<default> is
measured per client id (Kafka's metric tags).

The rate is measured as Kafka's Rate sensor does: `quota.window.num` (11) windows of
`quota.window.size.seconds` (1) each; a window too young to hold 10 full windows counts as
10 s long. A client over its quota is told to wait until its rate would fall back to the
quota, `(rate - quota) / quota * window`, at most the whole 11 s window, and its connection
is not read for that long (the broker's server sleeps; Kafka mutes the channel).

Nothing here runs per record, and nothing at all while no quota is set.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

# Kafka's QuotaConfigs: which keys each kind of entity takes, and whether a key is a whole number
LONG, DOUBLE = "long", "double"
CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: LONG,
    CONSUMER_BYTE_RATE: LONG,
    REQUEST_PERCENTAGE: DOUBLE,
    CONTROLLER_MUTATION_RATE: DOUBLE,
}
IP_KEYS = {CONNECTION_CREATION_RATE: LONG}

WINDOW_NUM = 11  # quota.window.num
WINDOW_SIZE_MS = 1000  # quota.window.size.seconds

ABSENT = object()  # the entity does not name this type (unlike None: the <default> name)


class QuotaEntityError(ValueError):
    """An entity or a value Kafka refuses with INVALID_REQUEST; the message is Kafka's."""


def validate(entity: dict[str, str | None], ops: Iterable[tuple[str, float, bool]]) -> None:
    """Kafka's ClientQuotaControlManager checks: the entity, then each (key, value, remove)."""
    if not entity:
        raise QuotaEntityError("Invalid empty client quota entity")
    for entity_type, name in entity.items():
        if entity_type not in ENTITY_TYPES:
            raise QuotaEntityError(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and name == "":
            raise QuotaEntityError(f"Empty {entity_type} not supported")
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            raise QuotaEntityError(
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
            )
        keys = IP_KEYS
    else:
        keys = CLIENT_KEYS
    for key, value, remove in ops:
        kind = keys.get(key)
        if kind is None:
            raise QuotaEntityError(f"Invalid configuration key {key}")
        if remove:
            continue
        if value != value or value in (float("inf"), float("-inf")):
            raise QuotaEntityError(f"Configuration {key} must be a number")
        if value < 0:
            raise QuotaEntityError(f"Configuration {key} must be non-negative, not {value:g}")
        if kind == LONG and abs(int(value + 1e-6) - value) > 1e-6:
            raise QuotaEntityError(f"Configuration {key} must be a Long value")


def entity_key(entity: dict[str, str | None]) -> tuple:
    """(user, client id) with ABSENT for a type the entity does not name."""
    return entity.get(USER, ABSENT), entity.get(CLIENT_ID, ABSENT)


def candidates(user: str, client_id: str) -> tuple[tuple, ...]:
    """The entities a client's quota may come from, in Kafka's order of precedence."""
    return (
        (user, client_id),
        (user, None),
        (user, ABSENT),
        (None, client_id),
        (None, None),
        (None, ABSENT),
        (ABSENT, client_id),
        (ABSENT, None),
    )


class _Rate:
    """Bytes in up to WINDOW_NUM windows of WINDOW_SIZE_MS (Kafka's SampledStat/Rate)."""

    __slots__ = ("windows", "total")

    def __init__(self) -> None:
        self.windows: deque[list[float]] = deque()  # [start ms, bytes]
        self.total = 0.0

    def record(self, nbytes: int, now_ms: float) -> tuple[float, float]:
        """Add ``nbytes``; returns (bytes per second, the window length in ms)."""
        windows = self.windows
        while windows and now_ms - windows[0][0] >= WINDOW_NUM * WINDOW_SIZE_MS:
            self.total -= windows.popleft()[1]
        if not windows or now_ms - windows[-1][0] >= WINDOW_SIZE_MS:
            windows.append([now_ms, 0.0])
        windows[-1][1] += nbytes
        self.total += nbytes
        elapsed = now_ms - windows[0][0]
        full = int(elapsed // WINDOW_SIZE_MS)
        if full < WINDOW_NUM - 1:
            elapsed += (WINDOW_NUM - 1 - full) * WINDOW_SIZE_MS
        return self.total * 1000 / elapsed, elapsed


class ClientQuotaManager:
    """One kind of byte-rate quota (produce or fetch), as Kafka has one manager per kind."""

    MAX_THROTTLE_MS = WINDOW_NUM * WINDOW_SIZE_MS

    def __init__(self, key: str):
        self.key = key
        self._quotas: dict[tuple, float] = {}
        self._resolved: dict[tuple[str, str], tuple[tuple, float] | None] = {}
        self._rates: dict[tuple, _Rate] = {}

    @property
    def active(self) -> bool:
        return bool(self._quotas)

    def set_quotas(self, entries: list[dict]) -> None:
        """Take the stored quotas (brokerd.state client_quotas()); measured rates of
        entities that keep a quota carry on."""
        self._quotas = {
            entity_key(e["entity"]): float(e["values"][self.key])
            for e in entries
            if self.key in e.get("values", {}) and IP not in e["entity"]
        }
        self._resolved = {}
        if not self._quotas:
            self._rates = {}

    def quota_for(self, user: str, client_id: str) -> tuple[tuple, float] | None:
        """(the metric key the client is measured under, its quota) or None: no quota."""
        if (user, client_id) in self._resolved:
            return self._resolved[(user, client_id)]
        found: tuple[tuple, float] | None = None
        for key in candidates(user, client_id):
            quota = self._quotas.get(key)
            if quota is not None:
                # Kafka's metric tags: the named parts of the entity, the client's own names
                metric = (user if key[0] is not ABSENT else "", client_id if key[1] is not ABSENT else "")
                found = (metric, quota)
                break
        if len(self._resolved) > 100_000:
            self._resolved.clear()
        self._resolved[(user, client_id)] = found
        return found

    def record(self, user: str, client_id: str | None, nbytes: int, now_ms: float | None = None) -> int:
        """Count ``nbytes`` for the client; returns how long it must wait (ms), 0 within quota."""
        if not self._quotas:
            return 0
        found = self.quota_for(user, client_id or "")
        if found is None:
            return 0
        metric, quota = found
        rate = self._rates.get(metric)
        if rate is None:
            rate = self._rates[metric] = _Rate()
        if now_ms is None:
            now_ms = time.monotonic() * 1000
        observed, window_ms = rate.record(nbytes, now_ms)
        if observed <= quota:
            return 0
        if quota <= 0:
            return self.MAX_THROTTLE_MS
        return min(int(round((observed - quota) / quota * window_ms)), self.MAX_THROTTLE_MS)


class ClientQuotas:
    """The broker's produce and fetch quota managers, following the stored quotas: a stat
    of the quotas file at most every ``check_interval_s``, a read only when it changed."""

    def __init__(
        self, version: Callable[[], object], read: Callable[[], list[dict]], check_interval_s: float = 0.1
    ):
        self._version_of = version
        self._read = read
        self._interval = check_interval_s
        self._version: object = object()
        self._checked = float("-inf")
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE)

    def refresh(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if now - self._checked < self._interval:
            return
        self._checked = now
        version = self._version_of()
        if version != self._version:
            self._version = version
            entries = self._read() if version is not None else []
            self.produce.set_quotas(entries)
            self.fetch.set_quotas(entries)

"""Security events for teaching: the latest authentication failures and authorization denials
of one broker, published to the state directory beside its replica status for `kctl watch`.

Kept in a bounded ring and published on the status tick, never per event: a client hammering
the broker with bad passwords costs a log line each, not a file write each.
"""

from __future__ import annotations

import logging
import time
from collections import deque

log = logging.getLogger("brokerd.security")

KEPT_EVENTS = 20
MAX_NAME_CHARS = 100


def printable(name: str) -> str:
    """A client-chosen name, safe for a log line: control characters escaped, length bounded."""
    shown = name[:MAX_NAME_CHARS].encode("unicode_escape").decode("ascii")
    return shown + ("..." if len(name) > MAX_NAME_CHARS else "")


class SecurityAudit:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self._events: deque[dict] = deque(maxlen=KEPT_EVENTS)
        self._changed = False

    def authentication_failed(self, user: str | None, host: str, mechanism: str | None, message: str) -> None:
        user = printable(user) if user else None
        mechanism = printable(mechanism) if mechanism else None
        log.warning(
            "failed authentication of %s from %s with %s: %s",
            user or "an unknown user",
            host,
            mechanism,
            message,
        )
        self._record(
            "authentication_failed",
            f"User:{user}" if user else None,
            host,
            mechanism=mechanism,
            message=message,
        )

    def authorization_denied(
        self, principal: str, host: str, operation: str, resource: str, rule: str
    ) -> None:
        log.info(
            "Principal = %s is Denied Operation = %s from host = %s on resource = %s: %s",
            principal,
            operation,
            host,
            resource,
            rule,
        )
        self._record(
            "authorization_denied",
            principal,
            host,
            operation=operation,
            resource=resource,
            rule=rule,
            message=rule,
        )

    def _record(self, kind: str, principal: str | None, host: str, **fields) -> None:
        self._events.append(
            {
                "time": round(time.time(), 3),
                "broker_id": self.broker_id,
                "kind": kind,
                "principal": principal,
                "host": host,
                "mechanism": None,
                "operation": None,
                "resource": None,
                "rule": None,
                **fields,
            }
        )
        self._changed = True

    def take_if_changed(self) -> list[dict] | None:
        """The events to publish, or None when nothing happened since the last call."""
        if not self._changed:
            return None
        self._changed = False
        return list(self._events)

"""The security events `kctl watch` shows: the authentication failures and authorization
denials the brokers recorded (brokerd.security.audit), newest last, each in one sentence that
names the broker, the principal and, for a denial, the rule that decided it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView

RECENT = 8


def recent(state: ClusterView, count: int = RECENT) -> list[dict]:
    """The last `count` events of every broker, oldest first."""
    return collapsed(state.security_events())[-count:]


def collapsed(events: list[dict]) -> list[dict]:
    """Runs of events that read the same as one, the latest of the run with a `count`: a client
    with a wrong password retries every few milliseconds, and one line says it all."""
    out: list[dict] = []
    for event in events:
        if out and line(out[-1]) == line(event):
            out[-1] = {**event, "count": out[-1]["count"] + 1}
        else:
            out.append({**event, "count": 1})
    return out


def line(event: dict) -> str:
    """The event in words; `count` (of collapsed repeats) is not part of it."""
    broker = f"broker {event.get('broker_id')}"
    principal, kind = event.get("principal"), event.get("kind")
    if kind == "authentication_failed":
        mechanism = f" ({event['mechanism']})" if event.get("mechanism") else ""
        return f"{broker}: authentication failed for {principal} from {event.get('host')}{mechanism}"
    if kind == "authorization_denied":
        return (
            f"{broker}: denied {principal} {event.get('operation')} on {event.get('resource')}"
            f" — {event.get('rule')}"
        )
    return f"{broker}: {kind} {principal}: {event.get('message')}"

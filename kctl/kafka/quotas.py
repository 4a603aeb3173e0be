"""Client quotas over the wire (KIP-546), as kafka-configs.sh --entity-type users/clients
manages them: DescribeClientQuotas and AlterClientQuotas, sent by kctl.kafka.protocolclient
(neither confluent-kafka's admin client nor kafka-python's has client quota calls), so
`kctl quota` works against any Kafka cluster.

An entity is a user and/or a client id; `None` names the `<default>` one (null on the wire).
"""

from __future__ import annotations

from kafka.errors import for_code
from kafka.protocol.admin.client_quotas import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
)

from kctl.kafka import protocolclient, pyadmin
from kctl.kafka.client import Connection
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

DEFAULT = "<default>"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
INVALID_REQUEST = 42


def entity_name(entity: dict[str, str | None]) -> str:
    """Kafka's path-like name of an entity: `/users/alice/clients/<default>`."""
    parts = [
        f"/{plural}/{DEFAULT if entity[key] is None else entity[key]}"
        for key, plural in (("user", "users"), ("client-id", "clients"))
        if key in entity
    ]
    return "".join(parts) or "/"


def _error(code: int, message: str | None, doing: str) -> KctlError:
    error = for_code(code)
    exit_code = ExitCode.INVALID_INPUT if code == INVALID_REQUEST else pyadmin.exit_code(error)
    return KctlError(f"cannot {doing}: {error.__name__}: {message or error.description}", exit_code)


def _send(conn: Connection, doing: str, request):
    """One request to any broker (a quota request needs no leader or controller)."""
    return protocolclient.session(conn, doing, lambda client: client.send(request))


def alter(conn: Connection, entity: dict[str, str | None], add: dict[str, float], delete: list[str]) -> None:
    """Set the `add` values and remove the `delete` keys of one entity's quotas."""
    ops = [(key, float(value), False) for key, value in add.items()] + [(key, 0.0, True) for key in delete]
    request = AlterClientQuotasRequest(entries=[(list(entity.items()), ops)], validate_only=False)
    doing = f"alter the quotas of {entity_name(entity)}"
    response = _send(conn, doing, request)
    for entry in response.entries:
        if entry.error_code:
            raise _error(entry.error_code, entry.error_message, doing)


def describe(
    conn: Connection, user: str | None, user_default: bool, client_id: str | None, client_default: bool
) -> list[dict]:
    """Every quota entity matching the filter (everything without one), with its values:
    [{"user": ..., "client_id": ..., "values": {key: value}}], a missing part being absent
    from the entity and `<default>` the default one."""
    components: list[tuple[str, int, str | None]] = []
    for entity_type, name, default in (
        ("user", user, user_default),
        ("client-id", client_id, client_default),
    ):
        if name is not None:
            components.append((entity_type, MATCH_EXACT, name))
        elif default:
            components.append((entity_type, MATCH_DEFAULT, None))
    request = DescribeClientQuotasRequest(components=components, strict=False)
    doing = "describe client quotas"
    response = _send(conn, doing, request)
    if response.error_code:
        raise _error(response.error_code, response.error_message, doing)
    rows = []
    for entry in response.entries or []:
        entity = {e.entity_type: e.entity_name for e in entry.entity}
        row = {
            key.replace("-", "_"): DEFAULT if entity[key] is None else entity[key]
            for key in ("user", "client-id", "ip")
            if key in entity
        }
        row["values"] = {
            v.key: int(v.value) if float(v.value).is_integer() else v.value
            for v in sorted(entry.values, key=lambda v: v.key)
        }
        rows.append(row)
    return sorted(rows, key=lambda r: (r.get("user", ""), r.get("client_id", ""), r.get("ip", "")))

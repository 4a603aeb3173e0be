"""Security files: SCRAM credentials, ACL bindings and client quotas, which any broker may
change (AlterUserScramCredentials, CreateAcls/DeleteAcls, AlterClientQuotas) and every broker
reloads when their file version changes, and each broker's latest security events.

    scram-credentials.json    user -> mechanism -> salt, stored key, server key, iterations
                              (never a password); readable by its owner only
    acls.json                 ACL bindings (resource pattern, principal, host, operation,
                              permission)
    client-quotas.json        client quota entities and their values
    security-events/<id>.json a broker's latest authentication failures and authorization denials

KRaft keeps the first three in the metadata log (UserScramCredentialRecord,
AccessControlEntryRecord, ClientQuotaRecord); here they are whole documents, each rewritten
under the write lock.
"""

from __future__ import annotations

import base64
from contextlib import AbstractContextManager

from brokerd.state.directory import JsonObject, StateDirectory, file_version, read_json, write_json

SCRAM_CREDENTIALS = "scram-credentials.json"
ACLS = "acls.json"
CLIENT_QUOTAS = "client-quotas.json"


class SecurityFiles(StateDirectory):
    # -- SCRAM credentials ------------------------------------------------------------------
    def scram_credentials(self) -> dict[str, dict[str, JsonObject]]:
        """user -> mechanism -> {"salt", "stored_key", "server_key" (base64), "iterations"}."""
        credentials: dict[str, dict[str, JsonObject]] = read_json(self.dir / SCRAM_CREDENTIALS, {})
        return credentials

    def scram_credentials_version(self) -> tuple[int, int] | None:
        """The change detector for SCRAM credentials: one stat."""
        return file_version(self.dir / SCRAM_CREDENTIALS)

    def update_scram_credentials(self) -> AbstractContextManager[dict[str, dict[str, JsonObject]]]:
        """Read-modify-write the SCRAM credentials under the write lock (AlterUserScramCredentials,
        any broker); the file stays readable by its owner only."""
        return self.updating(SCRAM_CREDENTIALS, {}, 0o600)

    def bootstrap_scram_credential(
        self, user: str, mechanism: str, salt: bytes, stored_key: bytes, server_key: bytes, iterations: int
    ) -> None:
        """A credential written before any broker runs (Kafka's `kafka-storage format
        --add-scram`): how the first super user can log in to a cluster with no users yet."""
        with self.update_scram_credentials() as credentials:
            credentials.setdefault(user, {})[mechanism] = {
                "salt": base64.b64encode(salt).decode(),
                "stored_key": base64.b64encode(stored_key).decode(),
                "server_key": base64.b64encode(server_key).decode(),
                "iterations": iterations,
            }

    # -- ACL bindings -----------------------------------------------------------------------
    def acl_bindings(self) -> list[JsonObject]:
        bindings: list[JsonObject] = read_json(self.dir / ACLS, [])
        return bindings

    def acl_bindings_version(self) -> tuple[int, int] | None:
        """The change detector for ACL bindings: one stat."""
        return file_version(self.dir / ACLS)

    def update_acl_bindings(self) -> AbstractContextManager[list[JsonObject]]:
        """Read-modify-write the ACL bindings under the write lock (CreateAcls, DeleteAcls)."""
        return self.updating(ACLS, [])

    # -- client quotas ----------------------------------------------------------------------
    def client_quotas(self) -> list[JsonObject]:
        """[{"entity": {"user"|"client-id"|"ip": name or None for <default>},
        "values": {key: float}}], one entry per entity that has a value."""
        quotas: list[JsonObject] = read_json(self.dir / CLIENT_QUOTAS, [])
        return quotas

    def client_quotas_version(self) -> tuple[int, int] | None:
        """The change detector for client quotas: one stat."""
        return file_version(self.dir / CLIENT_QUOTAS)

    def update_client_quotas(self) -> AbstractContextManager[list[JsonObject]]:
        """Read-modify-write the client quotas under the write lock (AlterClientQuotas)."""
        return self.updating(CLIENT_QUOTAS, [])

    # -- security events --------------------------------------------------------------------
    def publish_security_events(self, broker_id: int, events: list[JsonObject]) -> None:
        """A broker's latest security events, its own file (no lock: only it writes it)."""
        (self.dir / "security-events").mkdir(exist_ok=True)
        write_json(self.dir / "security-events" / f"{broker_id}.json", events)

    def security_events(self) -> list[JsonObject]:
        """Every broker's latest authentication failures and authorization denials, oldest first."""
        events = []
        for path in (self.dir / "security-events").glob("*.json"):
            events += read_json(path, [])
        return sorted(events, key=lambda e: e["time"])

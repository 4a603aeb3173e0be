"""SCRAM credentials (KIP-554), kept as Kafka keeps them: per user and mechanism a salt, the
stored key, the server key and the iteration count (ScramCredential), never the password.

The state directory holds them (readable by its owner only); every broker reads them again
when the file changes, so a user made through one broker logs in through any.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
from dataclasses import dataclass

from brokerd.state import ClusterState

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MECHANISM_CODES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}  # AlterUserScramCredentials' codes
HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
MIN_ITERATIONS = 4096  # Kafka's ScramMechanism bounds
MAX_ITERATIONS = 16384


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict:
        return {
            "salt": _b64(self.salt),
            "stored_key": _b64(self.stored_key),
            "server_key": _b64(self.server_key),
            "iterations": self.iterations,
        }

    @classmethod
    def from_json(cls, doc: dict) -> ScramCredential:
        return cls(
            base64.b64decode(doc["salt"]),
            base64.b64decode(doc["stored_key"]),
            base64.b64decode(doc["server_key"]),
            int(doc["iterations"]),
        )

    @classmethod
    def from_salted_password(
        cls, mechanism: str, salt: bytes, salted_password: bytes, iterations: int
    ) -> ScramCredential:
        """What AlterUserScramCredentials sends (RFC 5802's SaltedPassword) made into the keys
        a server keeps: StoredKey = H(HMAC(SaltedPassword, "Client Key")),
        ServerKey = HMAC(SaltedPassword, "Server Key")."""
        digest = HASHES[mechanism]
        client_key = hmac.digest(salted_password, b"Client Key", digest)
        return cls(
            salt, digest(client_key).digest(), hmac.digest(salted_password, b"Server Key", digest), iterations
        )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def iterations_error(iterations: int) -> str | None:
    """Kafka's refusal of an iteration count outside ScramMechanism's bounds, or None."""
    if iterations < MIN_ITERATIONS:
        return f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS}"
    if iterations > MAX_ITERATIONS:
        return f"Iterations {iterations} is greater than the maximum {MAX_ITERATIONS}"
    return None


class ScramCredentialStore:
    """The credentials of the state directory, re-read when the file changes."""

    def __init__(self, state: ClusterState):
        self._state = state
        self._version: object = object()
        self._users: dict[str, dict[str, ScramCredential]] = {}

    def refresh(self) -> None:
        version = self._state.scram_credentials_version()
        if version != self._version:
            self._version = version
            self._users = {
                user: {mech: ScramCredential.from_json(c) for mech, c in mechs.items()}
                for user, mechs in self._state.scram_credentials().items()
            }

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        self.refresh()
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        self.refresh()
        return self._users

    def alter(
        self, upsertions: dict[tuple[str, str], ScramCredential], deletions: set[tuple[str, str]]
    ) -> None:
        """Apply one AlterUserScramCredentials request's accepted changes at once."""
        with self._state.update_scram_credentials() as stored:
            for user, mechanism in deletions:
                stored.get(user, {}).pop(mechanism, None)
            for (user, mechanism), credential in upsertions.items():
                stored.setdefault(user, {})[mechanism] = credential.to_json()
            for user in [u for u, mechs in stored.items() if not mechs]:
                del stored[user]
        self.refresh()

    async def check_password(self, user: str, password: str) -> bool:
        """SASL/PLAIN against the SCRAM credentials: derive the keys from the password with
        the stored salt and iterations (PBKDF2, off the event loop) and compare."""
        import scramp  # not on start-up: only SASL/PLAIN logins need it

        for mechanism in MECHANISMS:
            credential = self.lookup(user, mechanism)
            if credential is not None:
                _, stored_key, _, _ = await asyncio.to_thread(
                    scramp.ScramMechanism(mechanism).make_auth_info,
                    password,
                    credential.iterations,
                    credential.salt,
                )
                return hmac.compare_digest(stored_key, credential.stored_key)
        return False

"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554): the SCRAM users of
the cluster, their mechanisms and iteration counts, never their secrets.

A client upserts a credential as a salt and a salted password (it never sends the password);
the broker keeps the stored key and server key derived from them. Describing needs DESCRIBE
on the cluster, altering needs ALTER on it. Errors and messages are Kafka's.
"""

from __future__ import annotations

from collections import Counter

from kafka.admin import ACLOperation, ResourceType
from kafka.errors import (
    ClusterAuthorizationFailedError,
    DuplicateResourceError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)

from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices
from brokerd.security.acl import CLUSTER_NAME
from brokerd.security.principal import Session
from brokerd.security.scram_credentials import (
    MECHANISM_CODES,
    ScramCredential,
    iterations_error,
)
from brokerd.security.standard_authorizer import StandardAuthorizer

CODES_BY_MECHANISM = {name: code for code, name in MECHANISM_CODES.items()}


class _Refused(Exception):
    def __init__(self, exc_class, message: str):
        super().__init__(message)
        self.errno = exc_class.errno


def _allowed(authorizer: StandardAuthorizer, session: Session, operation: ACLOperation) -> bool:
    return authorizer.authorize(session, operation, ResourceType.CLUSTER, CLUSTER_NAME)


async def handle_describe(services: BrokerServices, request: Request) -> dict:
    if not _allowed(services.security.authorizer, request.session, ACLOperation.DESCRIBE):
        return {
            "throttle_time_ms": 0,
            "error_code": ClusterAuthorizationFailedError.errno,
            "error_message": "Cluster authorization failed.",
            "results": [],
        }
    users = services.security.scram_credentials.users()
    asked = [u.name for u in request.body.users or []] or sorted(users)
    counts = Counter(asked)
    results = []
    for name in dict.fromkeys(asked):
        error: tuple[int, str | None]  # (error code, error message)
        if counts[name] > 1:
            error = (
                DuplicateResourceError.errno,
                "Cannot describe SCRAM credentials for the same user twice in a single request",
            )
        elif name not in users:
            error = (ResourceNotFoundError.errno, "Attempt to describe a user credential that does not exist")
        else:
            error = (0, None)
        infos = (
            []
            if error[0]
            else [
                {"mechanism": CODES_BY_MECHANISM[m], "iterations": c.iterations}
                for m, c in sorted(users[name].items())
            ]
        )
        results.append(
            {"user": name, "error_code": error[0], "error_message": error[1], "credential_infos": infos}
        )
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}


async def handle_alter(services: BrokerServices, request: Request) -> dict:
    body = request.body
    names = dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    if not _allowed(services.security.authorizer, request.session, ACLOperation.ALTER):
        return {
            "throttle_time_ms": 0,
            "results": [
                {
                    "user": name,
                    "error_code": ClusterAuthorizationFailedError.errno,
                    "error_message": "Cluster authorization failed.",
                }
                for name in names
            ],
        }
    seen = Counter((item.name, item.mechanism) for item in [*body.deletions, *body.upsertions])
    existing = services.security.scram_credentials.users()
    errors: dict[str, _Refused] = {}
    deletions, upsertions = set(), {}
    for item in body.deletions:
        try:
            mechanism = _check(item, seen)
            if mechanism not in existing.get(item.name, {}):
                raise _Refused(
                    ResourceNotFoundError, "Attempt to delete a user credential that does not exist"
                )
            deletions.add((item.name, mechanism))
        except _Refused as exc:
            errors.setdefault(item.name, exc)
    for item in body.upsertions:
        try:
            mechanism = _check(item, seen)
            problem = iterations_error(item.iterations)
            if problem is not None:
                raise _Refused(UnacceptableCredentialError, problem)
            upsertions[(item.name, mechanism)] = ScramCredential.from_salted_password(
                mechanism, item.salt, item.salted_password, item.iterations
            )
        except _Refused as exc:
            errors.setdefault(item.name, exc)
    services.security.scram_credentials.alter(
        {key: c for key, c in upsertions.items() if key[0] not in errors},
        {key for key in deletions if key[0] not in errors},
    )
    return {
        "throttle_time_ms": 0,
        "results": [
            {
                "user": name,
                "error_code": errors[name].errno if name in errors else 0,
                "error_message": str(errors[name]) if name in errors else None,
            }
            for name in names
        ],
    }


def _check(item, seen: Counter) -> str:
    """The mechanism's name, once the user name, mechanism and uniqueness are acceptable."""
    if not item.name:
        raise _Refused(UnacceptableCredentialError, "Username must not be empty")
    if item.mechanism not in MECHANISM_CODES:
        raise _Refused(UnsupportedSaslMechanismError, "Unknown SCRAM mechanism")
    if seen[(item.name, item.mechanism)] > 1:
        raise _Refused(
            DuplicateResourceError, "A user credential cannot be altered twice in the same request"
        )
    return MECHANISM_CODES[item.mechanism]

"""Secured clusters for tests: SCRAM users written before the brokers start (as
`kafka-storage format --add-scram` does), the super user's client properties, and client
settings for confluent-kafka."""

from __future__ import annotations

import secrets
from pathlib import Path

import scramp

from brokerd.security import client_properties
from brokerd.state import ClusterState

SUPER_USER = "admin"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_scram_user(state: ClusterState, user: str, password: str, iterations: int = 4096) -> None:
    for mechanism in SCRAM_MECHANISMS:
        salt, stored_key, server_key, _ = scramp.ScramMechanism(mechanism).make_auth_info(
            password, iteration_count=iterations)
        state.bootstrap_scram_credential(user, mechanism, salt, stored_key, server_key, iterations)


def sasl_settings(user: str, password: str, mechanism: str = "SCRAM-SHA-512",
                  protocol: str = "SASL_PLAINTEXT") -> dict[str, str]:
    return {"security.protocol": protocol, "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


def secure_cluster_dir(cluster_dir: Path, protocol: str = "SASL_PLAINTEXT",
                       authorizer: bool = True) -> tuple[str, dict[str, str]]:
    """Prepare a cluster directory whose brokers need SASL logins: the super user `admin`
    with a fresh password, its admin.properties, and the broker overrides. Returns the
    password and the overrides (without `listeners`, which LocalCluster adds per broker)."""
    state = ClusterState(cluster_dir)
    state.dir.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(16)
    add_scram_user(state, SUPER_USER, password)
    client_properties.write(client_properties.path(cluster_dir),
                            sasl_settings(SUPER_USER, password, protocol=protocol),
                            "the super user's client settings")
    overrides = {"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN"}
    if authorizer:
        overrides.update({"authorizer.class.name": AUTHORIZER, "super.users": f"User:{SUPER_USER}"})
    return password, overrides

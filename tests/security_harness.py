"""Secured clusters for tests: SCRAM users written before the brokers start (as
`kafka-storage format --add-scram` does), the super user's client properties, and client
settings for confluent-kafka."""

from __future__ import annotations

import secrets
from pathlib import Path

import scramp
from confluent_kafka import KafkaError, KafkaException, Producer

from brokerd.security import client_properties
from brokerd.state import ClusterState
from kctl.cluster import tls
from tests.cluster_harness import wait_until

SUPER_USER = "admin"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_scram_user(state: ClusterState, user: str, password: str, iterations: int = 4096) -> None:
    for mechanism in SCRAM_MECHANISMS:
        salt, stored_key, server_key, _ = scramp.ScramMechanism(mechanism).make_auth_info(
            password, iteration_count=iterations
        )
        state.bootstrap_scram_credential(user, mechanism, salt, stored_key, server_key, iterations)


def sasl_settings(
    user: str, password: str, mechanism: str = "SCRAM-SHA-512", protocol: str = "SASL_PLAINTEXT"
) -> dict[str, str]:
    return {
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def secure_cluster_dir(
    cluster_dir: Path, protocol: str = "SASL_PLAINTEXT", authorizer: bool = True
) -> tuple[str, dict[str, str]]:
    """Prepare a cluster directory whose listeners use ``protocol``: the super user `admin`
    (a SCRAM user with a fresh password, or over SSL alone the client certificate CN=admin),
    its admin.properties, TLS files where needed, and the broker overrides. Returns the
    password and the overrides (without `listeners`, which LocalCluster adds per broker)."""
    state = ClusterState(cluster_dir)
    state.dir.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(16)
    add_scram_user(state, SUPER_USER, password)
    settings = (
        sasl_settings(SUPER_USER, password, protocol=protocol)
        if protocol.startswith("SASL_")
        else {"security.protocol": protocol}
    )
    overrides = {"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN"}
    principal = f"User:{SUPER_USER}"
    if protocol in ("SSL", "SASL_SSL"):
        files = tls.generate(cluster_dir, client_cn=SUPER_USER if protocol == "SSL" else None)
        settings["ssl.ca.location"] = str(files.ca_cert)
        overrides.update(
            {
                "ssl.keystore.location": str(files.broker_keystore),
                "ssl.truststore.location": str(files.ca_cert),
            }
        )
        if protocol == "SSL":
            settings.update(
                {
                    "ssl.certificate.location": str(files.client_cert),
                    "ssl.key.location": str(files.client_key),
                }
            )
            overrides["ssl.client.auth"] = "required"
            principal = f"User:CN={SUPER_USER}"
    client_properties.write(client_properties.path(cluster_dir), settings, "the super user's client settings")
    if authorizer:
        overrides.update({"authorizer.class.name": AUTHORIZER, "super.users": principal})
    return password, overrides


def admin_settings(cluster_dir: Path) -> dict[str, str]:
    """The super user's librdkafka settings, as admin.properties holds them."""
    return client_properties.read(client_properties.path(cluster_dir))


def login_error(bootstrap: str, conf: dict[str, str]) -> KafkaError | None:
    """None when a confluent-kafka producer logs in and gets metadata; else the authentication
    error librdkafka reports (as soon as it does, not after a metadata timeout)."""
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0, "error_cb": errors.append, **conf})

    def outcome():
        try:
            producer.list_topics(timeout=0.2)
            return "logged in"
        except KafkaException:
            producer.poll(0)  # serves error_cb
            return any(e.code() == KafkaError._AUTHENTICATION for e in errors) and "refused"

    if wait_until(outcome, 10, "a login or its refusal") == "logged in":
        return None
    return next(e for e in errors if e.code() == KafkaError._AUTHENTICATION)

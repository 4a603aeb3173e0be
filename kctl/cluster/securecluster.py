"""A secured local cluster: what `kctl cluster up --security-protocol` sets up before brokers start.

A secured cluster refuses anyone who cannot authenticate, the brokers themselves included, so
before the first broker starts kctl makes what Kafka's operators make by hand:

- the super user `admin` with a random password, whose SCRAM credentials go into the state
  directory as Kafka's `kafka-storage format --add-scram` puts them into the metadata log
  (salt, stored key and server key only: the password itself is never stored there);
- for TLS, a private CA and the brokers' certificate (kctl.cluster.tls), and for SSL without SASL a
  client certificate `CN=admin`, since there the certificate is the identity;
- `<cluster>/admin.properties`, the admin's librdkafka settings (mode 0600, the only file
  holding the password): kctl's own commands use it against the local cluster, the brokers
  use it to authenticate to each other, and `kcat -F` reads it as is;
- the broker settings: the SASL mechanisms, the StandardAuthorizer with `admin` as super
  user, the TLS keystore and truststore. They are remembered in kctl.json like `-o` settings;
  each broker's `listeners` is derived from the protocol when it starts.
"""

from __future__ import annotations

import secrets
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from brokerd.security import client_properties
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

if TYPE_CHECKING:
    from brokerd.state.cluster_setup import ClusterSetup


class SecurityProtocol(str, Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"


ADMIN = "admin"
ADMIN_MECHANISM = "SCRAM-SHA-512"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_MECHANISMS = (*SCRAM_MECHANISMS, "PLAIN")
ITERATIONS = 4096  # Kafka's minimum for SCRAM
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SUPER_USERS = "super.users"
ALLOW_IF_NO_ACL = "allow.everyone.if.no.acl.found"


def uses_sasl(protocol: str) -> bool:
    return protocol.startswith("SASL_")


def uses_tls(protocol: str) -> bool:
    return protocol.endswith("SSL")


def service_login(cluster_dir: Path, protocol: str) -> tuple[Path | None, bool]:
    """How the local cluster's HTTP services reach its brokers and who may use them: the super
    user's client settings on a secured cluster (None on PLAINTEXT), and whether they ask their
    own users to log in as the cluster's users (with SASL)."""
    secured = protocol != SecurityProtocol.PLAINTEXT.value
    return (client_properties.path(cluster_dir) if secured else None), uses_sasl(protocol)


def check_protocol(cluster_dir: Path, existing: str | None, requested: str | None) -> str:
    """The protocol to start with: an existing cluster's own (`existing`), which cannot change
    (clients, certificates and credentials were made for it), else the requested one."""
    if existing is None:
        return requested or SecurityProtocol.PLAINTEXT.value
    if requested is not None and requested != existing:
        raise KctlError(
            f"the cluster in {cluster_dir} uses {existing}, not {requested}; "
            "remove the directory to start a different cluster",
            ExitCode.INVALID_INPUT,
        )
    return existing


def listeners(protocol: str, host: str, port: int) -> dict[str, str]:
    """One broker's `listeners` setting; none for PLAINTEXT, brokerd's default."""
    if protocol == SecurityProtocol.PLAINTEXT.value:
        return {}
    return {"listeners": f"{protocol}://{host}:{port}"}


def secure(state: ClusterSetup, protocol: str) -> dict[str, str]:
    """Credentials, certificates and admin.properties for a new cluster, before any broker
    runs; returns the broker settings that turn security on (nothing for PLAINTEXT)."""
    if protocol == SecurityProtocol.PLAINTEXT.value:
        return {}
    admin: dict[str, str] = {"security.protocol": protocol}
    brokers: dict[str, str] = {"authorizer.class.name": AUTHORIZER}
    if uses_sasl(protocol):
        password = secrets.token_urlsafe(24)
        bootstrap_scram_credentials(state, ADMIN, password)
        admin.update({"sasl.mechanism": ADMIN_MECHANISM, "sasl.username": ADMIN, "sasl.password": password})
        brokers.update(
            {
                "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
                "sasl.mechanism.inter.broker.protocol": ADMIN_MECHANISM,
                SUPER_USERS: f"User:{ADMIN}",
            }
        )
    if uses_tls(protocol):
        from kctl.cluster import tls  # cryptography: for TLS clusters only

        files = tls.generate(state.cluster_dir, client_cn=None if uses_sasl(protocol) else ADMIN)
        admin["ssl.ca.location"] = str(files.ca_cert)
        brokers.update(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(files.broker_keystore),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(files.ca_cert),
            }
        )
        if files.client_cert is not None:
            admin.update(
                {
                    "ssl.certificate.location": str(files.client_cert),
                    "ssl.key.location": str(files.client_key),
                }
            )
            brokers.update({"ssl.client.auth": "required", SUPER_USERS: f"User:CN={ADMIN}"})
    client_properties.write(
        client_properties.path(state.cluster_dir),
        admin,
        f"kctl: the super user of this {protocol} cluster; keep it private",
    )
    return brokers


def bootstrap_scram_credentials(state: ClusterSetup, user: str, password: str) -> None:
    """SCRAM-SHA-256 and -512 credentials for `user`, written straight into the state
    directory: how the first user exists before any broker can take AlterUserScramCredentials."""
    import scramp  # for SASL clusters only

    for mechanism in SCRAM_MECHANISMS:
        salt, stored_key, server_key, iterations = scramp.ScramMechanism(mechanism).make_auth_info(
            password, iteration_count=ITERATIONS
        )
        state.bootstrap_scram_credential(user, mechanism, salt, stored_key, server_key, iterations)

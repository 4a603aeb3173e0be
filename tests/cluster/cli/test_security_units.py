"""The pure parts of kctl's security: what a secured cluster is set up with, which properties a
client starts from, ACL options, explain's output, and the security lines of `kctl watch`."""

from __future__ import annotations

import base64
import io
import os
import stat

import pytest
import scramp
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourceType

from brokerd.security import client_properties
from brokerd.security.acl import AclBinding
from brokerd.security.authorizer import Decision
from brokerd.state import ClusterState
from kctl.acl import aclbindings as acls
from kctl.acl.aclexplain import Explanation
from kctl.cluster import brokerconfig, securecluster, securityevents, tls
from kctl.kafka import clientprops, pyadmin
from kctl.kafka.bootstrap import Bootstrap
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.user.user import read_password
from kctl.watch import dashboard


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def new_cluster(tmp_path):
    state = ClusterState(tmp_path / "cluster")
    state.initialize({1: 19092, 2: 19093})
    return state


@pytest.mark.cluster
def test_a_sasl_cluster_stores_salted_keys_and_the_password_only_in_admin_properties(new_cluster):
    settings = securecluster.secure(new_cluster, "SASL_PLAINTEXT")
    assert settings == {
        "authorizer.class.name": securecluster.AUTHORIZER,
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "super.users": "User:admin",
    }
    admin_file = client_properties.path(new_cluster.cluster_dir)
    admin = client_properties.read(admin_file)
    assert mode(admin_file) == 0o600
    assert admin["security.protocol"] == "SASL_PLAINTEXT" and admin["sasl.username"] == "admin"
    password = admin["sasl.password"]
    assert len(password) >= 24
    for mechanism in securecluster.SCRAM_MECHANISMS:
        stored = new_cluster.scram_credentials()["admin"][mechanism]
        salt = base64.b64decode(stored["salt"])
        expected = scramp.ScramMechanism(mechanism).make_auth_info(password, 4096, salt)
        assert base64.b64decode(stored["stored_key"]) == expected[1]
    for path in new_cluster.cluster_dir.rglob("*"):
        if path.is_file() and path != admin_file:
            assert password.encode() not in path.read_bytes(), path


@pytest.mark.cluster
def test_an_ssl_cluster_authenticates_the_admin_by_certificate(new_cluster):
    settings = securecluster.secure(new_cluster, "SSL")
    tls_dir = new_cluster.cluster_dir / tls.DIRECTORY
    assert settings["super.users"] == "User:CN=admin" and settings["ssl.client.auth"] == "required"
    assert settings["ssl.keystore.location"] == str(tls_dir / "broker.pem")
    assert settings["ssl.truststore.location"] == str(tls_dir / "ca.pem")
    assert "sasl.enabled.mechanisms" not in settings and new_cluster.scram_credentials() == {}
    admin = client_properties.read(client_properties.path(new_cluster.cluster_dir))
    assert admin == {
        "security.protocol": "SSL",
        "ssl.ca.location": str(tls_dir / "ca.pem"),
        "ssl.certificate.location": str(tls_dir / "admin.pem"),
        "ssl.key.location": str(tls_dir / "admin.key"),
    }


@pytest.mark.cluster
def test_plaintext_needs_nothing(new_cluster):
    assert securecluster.secure(new_cluster, "PLAINTEXT") == {}
    assert not client_properties.path(new_cluster.cluster_dir).exists()
    assert securecluster.listeners("PLAINTEXT", "127.0.0.1", 9092) == {}
    assert securecluster.listeners("SASL_SSL", "127.0.0.1", 9092) == {
        "listeners": "SASL_SSL://127.0.0.1:9092"
    }


@pytest.mark.unit
def test_certificates_chain_to_the_ca_and_name_the_loopback(tmp_path):
    files = tls.generate(tmp_path, client_cn="admin")
    ca = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    keystore = files.broker_keystore.read_bytes()
    assert keystore.startswith(b"-----BEGIN PRIVATE KEY-----")
    broker, issuer = x509.load_pem_x509_certificates(keystore[keystore.index(b"-----BEGIN CERTIFICATE") :])
    assert broker.issuer == ca.subject and issuer == ca
    ca.public_key().verify(
        broker.signature, broker.tbs_certificate_bytes, ec.ECDSA(broker.signature_hash_algorithm)
    )
    names = broker.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    # clients' 127.0.0.1 and every broker's own address, 127.0.1.ID
    addresses = [str(a) for a in names.get_values_for_type(x509.IPAddress)]
    assert addresses == ["127.0.0.1", *(f"127.0.1.{i}" for i in range(1, 255))]
    client = x509.load_pem_x509_certificate(files.client_cert.read_bytes())
    assert client.subject.rfc4514_string() == "CN=admin"
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert {mode(p) for p in (files.ca_key, files.broker_keystore, files.client_key)} == {0o600}


@pytest.mark.cluster
def test_an_existing_cluster_keeps_its_protocol(tmp_path):
    assert securecluster.check_protocol(tmp_path, None, None) == "PLAINTEXT"
    assert securecluster.check_protocol(tmp_path, None, "SSL") == "SSL"
    assert securecluster.check_protocol(tmp_path, "SSL", None) == "SSL"
    with pytest.raises(KctlError) as info:
        securecluster.check_protocol(tmp_path, "SASL_PLAINTEXT", "SSL")
    assert info.value.code == ExitCode.INVALID_INPUT and "uses SASL_PLAINTEXT, not SSL" in info.value.message


@pytest.mark.unit
def test_the_protocol_is_remembered_with_the_settings(tmp_path):
    assert brokerconfig.security_protocol(tmp_path) == "PLAINTEXT"
    brokerconfig.remember(tmp_path, {"super.users": "User:admin"}, "SASL_SSL")
    assert brokerconfig.security_protocol(tmp_path) == "SASL_SSL"
    assert brokerconfig.remembered(tmp_path) == {"super.users": "User:admin"}


@pytest.mark.unit
def test_admin_properties_go_to_the_local_cluster_only(new_cluster, tmp_path):
    client_properties.write(
        client_properties.path(new_cluster.cluster_dir),
        {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "admin"},
        "test",
    )
    directory = new_cluster.cluster_dir

    def settings(servers, source, command_config=None):
        return clientprops.for_bootstrap(Bootstrap(servers, source, directory), command_config)

    assert settings("127.0.0.1:19092", "local")["sasl.username"] == "admin"
    assert settings("localhost:19093,127.0.0.1:19092", "env")["sasl.username"] == "admin"
    assert settings("127.0.0.1:19092,elsewhere:9092", "flag") == {}
    assert settings("elsewhere:9092", "flag") == {}
    alice = tmp_path / "alice.properties"
    alice.write_text("# alice\nsasl.username=alice\nsasl.password = a=b\n")
    assert settings("127.0.0.1:19092", "local", alice) == {"sasl.username": "alice", "sasl.password": "a=b"}


@pytest.mark.unit
def test_kafka_python_gets_the_same_security_settings():
    assert pyadmin.security(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "a",
            "sasl.password": "p",
            "ssl.ca.location": "/ca.pem",
            "ssl.endpoint.identification.algorithm": "none",
            "linger.ms": "5",
        }
    ) == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "a",
        "sasl_plain_password": "p",
        "ssl_cafile": "/ca.pem",
        "ssl_check_hostname": False,
    }


@pytest.mark.unit
@pytest.mark.parametrize(
    "text, expected",
    [
        ("write", ACLOperation.WRITE),
        ("cluster-action", ACLOperation.CLUSTER_ACTION),
        ("ClusterAction", ACLOperation.CLUSTER_ACTION),
        ("DESCRIBE_CONFIGS", ACLOperation.DESCRIBE_CONFIGS),
        ("idempotent-write", ACLOperation.IDEMPOTENT_WRITE),
        ("All", ACLOperation.ALL),
    ],
)
def test_operations_in_kafka_acls_words(text, expected):
    assert acls.operation(text) == expected


@pytest.mark.unit
@pytest.mark.parametrize(
    "call",
    [
        lambda: acls.operation("publish"),
        lambda: acls.operation("any", ("read",)),
        lambda: acls.pattern_type("glob"),
        lambda: acls.principal("alice"),
    ],
)
def test_bad_acl_words_are_invalid_input(call):
    with pytest.raises(KctlError) as info:
        call()
    assert info.value.code == ExitCode.INVALID_INPUT


@pytest.mark.unit
def test_one_binding_per_resource_principal_host_and_operation():
    who = acls.Who(allow=("User:alice",), deny=("User:bob",), deny_hosts=("10.0.0.1",))
    on = acls.resources(["orders"], [], True, [])
    made = acls.new_bindings(on, ACLResourcePatternType.LITERAL, who, [ACLOperation.WRITE, ACLOperation.READ])
    assert len(made) == 2 * 2 * 2
    assert (
        AclBinding(
            ResourceType.CLUSTER,
            "kafka-cluster",
            ACLResourcePatternType.LITERAL,
            "User:bob",
            "10.0.0.1",
            ACLOperation.READ,
            ACLPermissionType.DENY,
        )
        in made
    )
    assert {b.host for b in made if b.permission == ACLPermissionType.ALLOW} == {"*"}


@pytest.mark.unit
def test_filters_match_anything_not_named():
    [everything] = acls.filters([], ACLResourcePatternType.ANY, acls.Who(), [])
    assert (
        everything.resource_type,
        everything.resource_name,
        everything.principal,
        everything.host,
        everything.operation,
        everything.permission,
    ) == (ResourceType.ANY, None, None, None, ACLOperation.ANY, ACLPermissionType.ANY)
    named = acls.filters(
        acls.resources(["orders"], ["g"], False, []),
        ACLResourcePatternType.MATCH,
        acls.Who(either=("User:alice",)),
        [ACLOperation.READ],
    )
    assert [(f.resource_type, f.resource_name, f.principal, f.permission) for f in named] == [
        (ResourceType.TOPIC, "orders", "User:alice", ACLPermissionType.ANY),
        (ResourceType.GROUP, "g", "User:alice", ACLPermissionType.ANY),
    ]


@pytest.mark.unit
def test_explain_says_the_verdict_and_the_rule():
    binding = AclBinding(
        ResourceType.TOPIC,
        "orders",
        ACLResourcePatternType.LITERAL,
        "User:alice",
        "*",
        ACLOperation.WRITE,
        ACLPermissionType.ALLOW,
    )
    found = Explanation(
        "User:alice",
        "127.0.0.1",
        ACLOperation.DESCRIBE,
        acls.Resource(ResourceType.TOPIC, "orders"),
        Decision(True, "allowed by it (DESCRIBE is implied by WRITE)", binding),
        [binding],
        ["User:admin"],
        False,
    )
    assert found.lines() == [
        "ALLOWED: User:alice DESCRIBE on TOPIC:orders from 127.0.0.1",
        "  rule: allowed by it (DESCRIBE is implied by WRITE)",
    ]
    doc = found.to_json()
    assert doc["binding"]["operation"] == "WRITE" and doc["acls"] == [binding.to_json()]


@pytest.mark.unit
def test_security_events_in_words_with_repeats_collapsed():
    failed = {
        "time": 1.0,
        "broker_id": 2,
        "kind": "authentication_failed",
        "principal": "User:bob",
        "host": "127.0.0.1",
        "mechanism": "SCRAM-SHA-512",
        "operation": None,
        "resource": None,
        "rule": None,
        "message": "invalid credentials",
    }
    denied = {
        **failed,
        "time": 3.0,
        "broker_id": 1,
        "kind": "authorization_denied",
        "mechanism": None,
        "operation": "WRITE",
        "resource": "TOPIC:orders",
        "rule": "no ACL allows it (default deny)",
    }
    assert securityevents.line(failed) == (
        "broker 2: authentication failed for User:bob from 127.0.0.1 (SCRAM-SHA-512)"
    )
    assert securityevents.line(denied) == (
        "broker 1: denied User:bob WRITE on TOPIC:orders — no ACL allows it (default deny)"
    )
    events = securityevents.collapsed([failed, {**failed, "time": 2.0}, denied])
    assert [(e["time"], e["count"]) for e in events] == [(2.0, 2), (3.0, 1)]
    snap = {"controller": None, "brokers": [], "topics": [], "security_events": events}
    [section] = [s for s in dashboard.build(snap, []) if s.title == "SECURITY"]
    assert section.rows[0][1].endswith("(SCRAM-SHA-512) (x2)")


@pytest.mark.unit
def test_a_password_comes_from_one_place(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret\n"))
    assert read_password(None, True) == "s3cret"
    assert read_password("given", False) == "given"
    for args, code in [
        (("x", True), ExitCode.USAGE),
        ((None, False), ExitCode.USAGE),
        (("", False), ExitCode.INVALID_INPUT),
    ]:
        with pytest.raises(KctlError) as info:
            read_password(*args)
        assert info.value.code == code

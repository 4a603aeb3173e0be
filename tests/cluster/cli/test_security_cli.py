"""Secured clusters through the real CLI: `kctl cluster up --security-protocol`, kctl logging in
with admin.properties, `kctl user`, `kctl acl`, and clients we did not write (confluent-kafka,
kcat) logging in as the users kctl made and being refused what ACLs do not allow."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest
from confluent_kafka import KafkaError

from brokerd.security import client_properties
from brokerd.state import ClusterState
from kctl.shell.exit_codes import ExitCode
from tests.cluster_harness import wait_until
from tests.kctl.cli import run_kctl
from tests.kctl.local import BROKERS_ONLY
from tests.security_harness import login_error, sasl_settings

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

ALICE = "alice-pw-1"


def kctl(directory, *args, expect=0, input=None):
    """kctl against the cluster in `directory`, whatever the developer's shell exports."""
    result = run_kctl(
        *args, input=input, env={"KCTL_HOME": str(directory), "KCTL_BOOTSTRAP": "", "KCTL_COMMAND_CONFIG": ""}
    )
    assert result.returncode == expect, result.stderr
    return result


def stop(directory) -> None:
    """Stop the cluster's brokers even when `cluster down` cannot (or a test broke it)."""
    run_kctl("cluster", "down", "--dir", str(directory))
    for reg in ClusterState(directory).brokers():
        if reg.alive:
            os.kill(reg.pid, 9)


def start(directory, protocol: str, brokers: int) -> str:
    """Start a cluster; returns its bootstrap. Brokers started before a failure are stopped."""
    try:
        up = kctl(
            directory,
            "cluster",
            "up",
            "-n",
            str(brokers),
            "--security-protocol",
            protocol,
            "--json",
            *BROKERS_ONLY,
        )
        doc = json.loads(up.stdout)
        assert doc["security_protocol"] == protocol
        assert doc["client_properties"] == str(client_properties.path(directory))
        return doc["bootstrap"]
    except BaseException:
        stop(directory)
        raise


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One SASL_PLAINTEXT cluster of two brokers (they log in to each other) for the module."""
    directory = tmp_path_factory.mktemp("secured") / "cluster"
    bootstrap = start(directory, "SASL_PLAINTEXT", 2)
    try:
        kctl(directory, "user", "create", "alice", "--password-stdin", input=ALICE + "\n")
        kctl(directory, "user", "create", "alice", "--password", ALICE, "--mechanism", "SCRAM-SHA-256")
        yield directory, bootstrap
    finally:
        stop(directory)


def data_chunks(path):
    """A file's bytes, without the holes of a sparse file (preallocated segments and indexes
    are gigabytes of holes, which read as zeros and cannot hold a password)."""
    with open(path, "rb") as f:
        end, position = os.fstat(f.fileno()).st_size, 0
        while position < end:
            try:
                start = os.lseek(f.fileno(), position, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                return
            position = os.lseek(f.fileno(), start, os.SEEK_HOLE)
            f.seek(start)
            yield f.read(position - start)


def properties_file(tmp_path, name: str, conf: dict[str, str]):
    path = tmp_path / f"{name}.properties"
    client_properties.write(path, conf, name)
    return path


def test_kctl_logs_in_with_admin_properties(cluster):
    directory, bootstrap = cluster
    admin_file = client_properties.path(directory)
    assert stat.S_IMODE(os.stat(admin_file).st_mode) == 0o600
    admin = client_properties.read(admin_file)
    assert (admin["security.protocol"], admin["sasl.mechanism"], admin["sasl.username"]) == (
        "SASL_PLAINTEXT",
        "SCRAM-SHA-512",
        "admin",
    )
    assert ALICE not in admin_file.read_text()
    kctl(directory, "topic", "create", "orders", "-p", "2", "-r", "2")
    kctl(directory, "produce", "orders", "--acks", "all", input="a\nb\nc\n")
    assert sorted(kctl(directory, "consume", "orders", "-e", "-q").stdout.split()) == [b"a", b"b", b"c"]
    described = json.loads(kctl(directory, "topic", "describe", "orders", "--json").stdout)
    assert all(sorted(p["isr"]) == [1, 2] for p in described["partitions"])
    # the `export KCTL_BOOTSTRAP=...` that cluster up prints names the local cluster: same login
    assert "orders" in kctl(directory, "topic", "list", "-b", bootstrap).stdout.decode()
    kctl(directory, "cluster", "status")


def test_only_admin_properties_holds_the_admin_password(cluster):
    directory, _ = cluster
    password = client_properties.read(client_properties.path(directory))["sasl.password"].encode()
    holders = [
        p for p in directory.rglob("*") if p.is_file() and any(password in chunk for chunk in data_chunks(p))
    ]
    assert holders == [client_properties.path(directory)]


@pytest.mark.interop
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_a_user_kctl_made_logs_in_with_any_client(cluster, mechanism):
    _, bootstrap = cluster
    assert login_error(bootstrap, sasl_settings("alice", ALICE, mechanism)) is None
    refused = login_error(bootstrap, sasl_settings("alice", "wrong", mechanism))
    assert refused is not None and refused.code() == KafkaError._AUTHENTICATION, refused


def test_users_are_listed_and_deleted(cluster):
    directory, bootstrap = cluster
    kctl(directory, "user", "create", "dave", "--password", "d-pw")
    listed = json.loads(kctl(directory, "user", "list", "--json").stdout)
    users = {u["user"]: u["credentials"] for u in listed}
    assert [c["mechanism"] for c in users["alice"]] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert users["dave"] == [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}]
    kctl(directory, "user", "delete", "dave")
    assert login_error(bootstrap, sasl_settings("dave", "d-pw")) is not None
    missing = kctl(directory, "user", "list", "dave", expect=ExitCode.NOT_FOUND)
    assert missing.stderr.startswith("kctl: error: cannot describe user 'dave'")
    kctl(
        directory,
        "user",
        "create",
        "eve",
        "--password",
        "x",
        "--iterations",
        "100",
        expect=ExitCode.INVALID_INPUT,
    )
    kctl(directory, "user", "create", "eve", expect=ExitCode.USAGE)  # no password, no terminal


def test_an_acl_lets_alice_write_one_topic_only(cluster, tmp_path):
    directory, _ = cluster
    kctl(directory, "topic", "create", "payments", "-p", "1")
    kctl(directory, "topic", "create", "secrets", "-p", "1")
    alice = properties_file(tmp_path, "alice", sasl_settings("alice", ALICE))
    kctl(
        directory,
        "acl",
        "create",
        "--allow-principal",
        "User:alice",
        "--operation",
        "write",
        "--topic",
        "payments",
    )
    kctl(directory, "produce", "payments", "-F", str(alice), input="paid\n")
    refused = kctl(
        directory, "produce", "secrets", "-F", str(alice), input="peek\n", expect=ExitCode.NOT_AUTHORIZED
    )
    assert "Topic authorization failed" in refused.stderr or "TOPIC_AUTHORIZATION_FAILED" in refused.stderr
    events = kctl(directory, "watch", "--once").stdout.decode()
    assert "denied User:alice" in events


def test_acls_list_and_delete_round_trip(cluster):
    directory, _ = cluster
    kctl(
        directory,
        "acl",
        "create",
        "--allow-principal",
        "User:bob",
        "--allow-principal",
        "User:carol",
        "--operation",
        "read",
        "--operation",
        "describe",
        "--topic",
        "logs-",
        "--resource-pattern-type",
        "prefixed",
        "--group",
        "readers",
    )
    mine = json.loads(kctl(directory, "acl", "list", "--principal", "User:bob", "--json").stdout)
    assert len(mine) == 4 and {a["resource_type"] for a in mine} == {"TOPIC", "GROUP"}
    applying = json.loads(
        kctl(
            directory,
            "acl",
            "list",
            "--topic",
            "logs-today",
            "--resource-pattern-type",
            "match",
            "--principal",
            "User:carol",
            "--json",
        ).stdout
    )
    assert {(a["operation"], a["pattern_type"]) for a in applying} == {
        ("READ", "PREFIXED"),
        ("DESCRIBE", "PREFIXED"),
    }
    deleted = kctl(directory, "acl", "delete", "--principal", "User:bob").stdout.decode()
    assert deleted.count("User:bob") == 4
    assert json.loads(kctl(directory, "acl", "list", "--principal", "User:bob", "--json").stdout) == []
    assert len(json.loads(kctl(directory, "acl", "list", "--principal", "User:carol", "--json").stdout)) == 4
    kctl(directory, "acl", "delete", expect=ExitCode.USAGE)


def explain(directory, *args) -> dict:
    return json.loads(kctl(directory, "acl", "explain", *args, "--json").stdout)


def test_explain_names_the_rule_that_decides(cluster):
    directory, _ = cluster
    kctl(directory, "acl", "create", "--allow-principal", "User:*", "--operation", "read", "--topic", "news")
    kctl(
        directory,
        "acl",
        "create",
        "--deny-principal",
        "User:mallory",
        "--operation",
        "all",
        "--topic",
        "news",
    )
    kctl(
        directory,
        "acl",
        "create",
        "--allow-principal",
        "User:frank",
        "--operation",
        "alter-configs",
        "--topic",
        "news",
    )
    admin = explain(directory, "--principal", "User:admin", "--operation", "delete", "--topic", "news")
    assert admin["allowed"] and "super user" in admin["rule"]
    denied = explain(directory, "--principal", "User:mallory", "--operation", "read", "--topic", "news")
    assert not denied["allowed"] and denied["binding"]["permission"] == "DENY"
    allowed = explain(directory, "--principal", "User:grace", "--operation", "read", "--topic", "news")
    assert allowed["allowed"] and allowed["binding"]["principal"] == "User:*"
    implied = explain(directory, "--principal", "User:grace", "--operation", "describe", "--topic", "news")
    assert implied["allowed"] and "implied by READ" in implied["rule"]
    configs = explain(
        directory, "--principal", "User:frank", "--operation", "describe-configs", "--topic", "news"
    )
    assert configs["allowed"] and "implied by ALTER_CONFIGS" in configs["rule"]
    nothing = explain(directory, "--principal", "User:grace", "--operation", "read", "--group", "no-acls")
    assert not nothing["allowed"] and "allow.everyone.if.no.acl.found=false" in nothing["rule"]
    unmatched = explain(directory, "--principal", "User:grace", "--operation", "write", "--topic", "news")
    assert not unmatched["allowed"] and unmatched["binding"] is None and "none allows" in unmatched["rule"]
    text = (
        kctl(
            directory,
            "acl",
            "explain",
            "--principal",
            "User:mallory",
            "--operation",
            "read",
            "--topic",
            "news",
        )
        .stdout.decode()
        .splitlines()
    )
    assert text[0] == "DENIED: User:mallory READ on TOPIC:news from 127.0.0.1"
    assert text[1].startswith("  rule: denied by DENY User:mallory ALL on TOPIC:LITERAL:news")


def test_watch_tells_failed_logins(cluster):
    directory, bootstrap = cluster
    assert login_error(bootstrap, sasl_settings("alice", "not-her-password")) is not None
    told = "authentication failed for User:alice"
    wait_until(
        lambda: told in kctl(directory, "watch", "--once").stdout.decode(),
        10,
        "the failed login in kctl watch",
    )


def test_an_existing_cluster_keeps_its_protocol(cluster):
    directory, _ = cluster
    result = kctl(directory, "cluster", "up", "--security-protocol", "SSL", expect=ExitCode.INVALID_INPUT)
    assert result.stderr.strip() == (
        f"kctl: error: the cluster in {directory} uses SASL_PLAINTEXT, not SSL; "
        "remove the directory to start a different cluster"
    )


@pytest.mark.interop
@pytest.mark.parametrize("protocol", ["SASL_SSL", "SSL"])
def test_tls_clusters_start_and_kcat_lists_their_brokers(tmp_path, protocol):
    directory = tmp_path / "cluster"
    bootstrap = start(directory, protocol, 1)
    try:
        assert (directory / "tls" / "ca.pem").exists()
        listing = subprocess.run(
            ["kcat", "-F", str(client_properties.path(directory)), "-b", bootstrap, "-L"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert listing.returncode == 0, listing.stderr
        assert f"from broker 1: {protocol.lower()}://{bootstrap}/1" in listing.stdout
        kctl(directory, "topic", "create", "t", "-p", "1")
        kctl(directory, "produce", "t", input="over tls\n")
        assert kctl(directory, "consume", "t", "-e", "-q").stdout == b"over tls\n"
    finally:
        stop(directory)

"""SASL on the wire (KIP-43, KIP-152, KIP-368): PLAIN and SCRAM logins by clients we did not
write, refusals in Kafka's words, SCRAM users managed over the wire (KIP-554), credentials
at rest, and a broker that shrugs off a flood of bad logins."""

from __future__ import annotations

import asyncio
import random
import struct
import subprocess
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.protocol.api_key import ApiKey

from brokerd.protocol.codec import RequestHeader, encode_request
from brokerd.replication.broker_client import BrokerClient
from brokerd.security.inter_broker import InterBrokerSecurity
from brokerd.state import ClusterState
from tests.cluster_harness import running_cluster
from tests.raw_request import RawConnection
from tests.security_harness import add_scram_user, login_error, sasl_settings, secure_cluster_dir

ALICE_PASSWORD = "alice-secret-1"
REAUTH_MS = 3000
pytestmark = [pytest.mark.cluster, pytest.mark.interop]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("sasl")
    password, overrides = secure_cluster_dir(directory)
    overrides["connections.max.reauth.ms"] = str(REAUTH_MS)
    add_scram_user(ClusterState(directory), "alice", ALICE_PASSWORD)
    with running_cluster(directory, 1, overrides, "SASL_PLAINTEXT") as running:
        running.admin_password = password
        yield running


def admin_client(cluster, user="admin", password=None, mechanism="SCRAM-SHA-512") -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": cluster.bootstrap,
            "log_level": 0,
            **sasl_settings(user, password or cluster.admin_password, mechanism),
        }
    )


def login(cluster, user: str, password: str, mechanism: str) -> KafkaError | None:
    return login_error(cluster.bootstrap, sasl_settings(user, password, mechanism))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_a_user_logs_in_with_every_mechanism(cluster, mechanism):
    assert login(cluster, "alice", ALICE_PASSWORD, mechanism) is None


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("mallory", ALICE_PASSWORD)])
def test_wrong_passwords_and_unknown_users_are_refused(cluster, mechanism, user, password):
    error = login(cluster, user, password, mechanism)
    assert error is not None and error.code() == KafkaError._AUTHENTICATION, error
    assert "Authentication failed" in error.str()


def test_kcat_on_librdkafka_before_2_6_1_logs_in_with_scram(cluster):
    """Old librdkafka repeats the client nonce in its client-final message (Kafka 3.8.1
    accepts it); kcat here links such a librdkafka."""
    result = subprocess.run(
        [
            "kcat",
            "-b",
            cluster.bootstrap,
            "-X",
            "security.protocol=SASL_PLAINTEXT",
            "-X",
            "sasl.mechanism=SCRAM-SHA-512",
            "-X",
            "sasl.username=alice",
            "-X",
            f"sasl.password={ALICE_PASSWORD}",
            "-L",
            "-m",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert "1 brokers" in result.stdout


def test_only_api_versions_and_sasl_are_served_before_login(cluster):
    port = cluster.ports[1]
    with RawConnection(port) as conn:
        versions = conn.request(ApiKey.ApiVersions, 0, {})
        assert versions.error_code == 0
        conn.send(ApiKey.Metadata, 1, {"topics": None})
        assert conn.closed_by_broker()


def test_handshake_names_the_enabled_mechanisms_and_refuses_others(cluster):
    with RawConnection(cluster.ports[1]) as conn:
        response = conn.request(ApiKey.SaslHandshake, 1, {"mechanism": "GSSAPI"})
        assert response.error_code == 33  # UNSUPPORTED_SASL_MECHANISM
        assert set(response.mechanisms) == {"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"}
        assert conn.closed_by_broker()


@pytest.mark.parametrize(
    "mechanism, token",
    [
        (None, b"\0alice\0" + ALICE_PASSWORD.encode()),  # no handshake first
        ("PLAIN", b"alice-without-separators"),
        ("PLAIN", b"bob\0alice\0" + ALICE_PASSWORD.encode()),  # authzid differs from authcid
        ("SCRAM-SHA-256", b"\xff\xfe not a client-first message"),
    ],
)
def test_a_bad_login_is_refused_with_sasl_authentication_failed_then_closed(cluster, mechanism, token):
    with RawConnection(cluster.ports[1]) as conn:
        if mechanism is not None:
            assert conn.request(ApiKey.SaslHandshake, 1, {"mechanism": mechanism}).error_code == 0
        response = conn.request(ApiKey.SaslAuthenticate, 1, {"auth_bytes": token})
        assert response.error_code == 58 and response.error_message
        assert conn.closed_by_broker()


def plain_login(conn: RawConnection, user: str, password: str):
    assert conn.request(ApiKey.SaslHandshake, 1, {"mechanism": "PLAIN"}).error_code == 0
    return conn.request(ApiKey.SaslAuthenticate, 1, {"auth_bytes": f"\0{user}\0{password}".encode()})


def test_a_session_expires_after_connections_max_reauth_ms(cluster):
    with RawConnection(cluster.ports[1]) as conn:
        response = plain_login(conn, "alice", ALICE_PASSWORD)
        assert response.error_code == 0 and response.session_lifetime_ms == REAUTH_MS
        assert conn.request(ApiKey.Metadata, 1, {"topics": []}).brokers
        time.sleep(REAUTH_MS / 1000 + 0.2)  # the expiry itself is under test
        conn.send(ApiKey.Metadata, 1, {"topics": []})
        assert conn.closed_by_broker()


def test_reauthentication_keeps_the_connection_but_not_a_new_principal(cluster):
    add_scram_user(cluster.state, "bob", "bob-secret")
    with RawConnection(cluster.ports[1]) as conn:
        assert plain_login(conn, "alice", ALICE_PASSWORD).error_code == 0
        assert plain_login(conn, "alice", ALICE_PASSWORD).error_code == 0
        assert conn.request(ApiKey.Metadata, 1, {"topics": []}).brokers
        refused = plain_login(conn, "bob", "bob-secret")
        assert refused.error_code == 58 and "Cannot change principals" in refused.error_message


def test_librdkafka_reauthenticates_before_its_session_expires(cluster):
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "log_level": 0, **sasl_settings("alice", ALICE_PASSWORD)}
    )
    producer.list_topics(timeout=5)
    time.sleep(2 * REAUTH_MS / 1000)  # spans two session lifetimes
    assert producer.list_topics(timeout=5).brokers


def test_a_broker_reauthenticates_its_own_connections_before_the_session_expires(cluster):
    """Replica fetchers and transaction markers log in as the super user like any client, so
    they must re-authenticate (KIP-368) too, or the other broker closes their connection at
    the first request after connections.max.reauth.ms."""
    security = InterBrokerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-512", cluster.dir)

    async def metadata_across_two_sessions():
        client = BrokerClient("127.0.0.1", cluster.ports[1], "inter-broker-reauth", 5.0, security)
        try:
            assert (await client.request(ApiKey.Metadata, 1, {"topics": []})).brokers
            connection = client._writer
            await asyncio.sleep(REAUTH_MS / 1000 + 0.2)  # the expiry itself is under test
            assert (await client.request(ApiKey.Metadata, 1, {"topics": []})).brokers
            assert client._writer is connection, "the connection was replaced, not kept"
        finally:
            client.close()

    asyncio.run(metadata_across_two_sessions())


def test_scram_users_are_made_described_and_deleted_over_the_wire(cluster):
    admin = admin_client(cluster)
    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"carol-pw", b"salt-of-carol"
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result()
    assert login(cluster, "carol", "carol-pw", "SCRAM-SHA-256") is None
    assert login(cluster, "carol", "carol-pw", "PLAIN") is None
    described = admin.describe_user_scram_credentials(["carol"])["carol"].result()
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 8192)
    ]
    unknown = admin.describe_user_scram_credentials(["nobody"])["nobody"]
    with pytest.raises(Exception, match="does not exist"):
        unknown.result()
    deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)
    for future in admin.alter_user_scram_credentials([deletion]).values():
        future.result()
    assert login(cluster, "carol", "carol-pw", "SCRAM-SHA-256") is not None


def test_too_few_iterations_are_refused_with_unacceptable_credential(cluster):
    upsert = UserScramCredentialUpsertion(
        "dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 1000), b"pw", b"salt"
    )
    admin = admin_client(cluster)
    future = admin.alter_user_scram_credentials([upsert])["dave"]
    with pytest.raises(KafkaException, match="less than the minimum 4096"):
        future.result()


def test_no_password_is_stored_in_the_state_directory(cluster):
    credentials = cluster.state.dir / "scram-credentials.json"
    assert credentials.stat().st_mode & 0o777 == 0o600
    for path in cluster.dir.rglob("*"):
        if path.is_file() and path.name != "admin.properties":
            data = path.read_bytes()
            assert ALICE_PASSWORD.encode() not in data, path
            assert cluster.admin_password.encode() not in data, path


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


async def _bad_scram_logins(port: int, count: int, concurrency: int = 20) -> None:
    """Wrong-password SCRAM logins: a real client-first, then a client-final whose proof
    cannot be right. Each ends in SASL_AUTHENTICATION_FAILED and a closed connection."""

    async def one(i: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for step, body in enumerate(
                (
                    [ApiKey.SaslHandshake, {"mechanism": "SCRAM-SHA-256"}],
                    [ApiKey.SaslAuthenticate, {"auth_bytes": f"n,,n=alice,r=c{i}".encode()}],
                )
            ):
                writer.write(encode_request(RequestHeader(body[0], 1, step, "flood"), body[1]))
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                reply = await reader.readexactly(size)
            nonce = reply.split(b"r=")[1].split(b",")[0].decode()
            final = f"c=biws,r={nonce},p=" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="
            writer.write(
                encode_request(
                    RequestHeader(ApiKey.SaslAuthenticate, 1, 3, "flood"), {"auth_bytes": final.encode()}
                )
            )
            await reader.read()  # answered, then closed
        finally:
            writer.close()

    await _in_waves(one, count, concurrency)


async def _random_sasl_payloads(port: int, count: int, concurrency: int = 20) -> None:
    rng = random.Random(7)

    async def one(i: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            mechanism = rng.choice(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "x" * rng.randint(1, 300)])
            writer.write(
                encode_request(RequestHeader(ApiKey.SaslHandshake, 1, 1, "fuzz"), {"mechanism": mechanism})
            )
            payload = rng.randbytes(rng.randint(0, 2000))
            writer.write(
                encode_request(
                    RequestHeader(ApiKey.SaslAuthenticate, rng.randint(0, 2), 2, "fuzz"),
                    {"auth_bytes": payload},
                )
            )
            await reader.read()
        except ConnectionResetError:
            pass  # refused at the handshake, the broker closed before reading the payload
        finally:
            writer.close()

    await _in_waves(one, count, concurrency)


async def _in_waves(one, count: int, concurrency: int) -> None:
    for start in range(0, count, concurrency):
        await asyncio.gather(*(one(i) for i in range(start, min(count, start + concurrency))))


# Logins of each kind: a leak of 5 KiB a connection would pass the 20 MiB bound (each bad
# SCRAM login costs the client a 4096-round PBKDF2, most of this test's time).
FLOOD = 4_000


def test_floods_of_bad_logins_leave_the_broker_serving_with_flat_memory(cluster):
    pid = cluster.procs[1].pid
    port = cluster.ports[1]
    asyncio.run(_bad_scram_logins(port, 500))  # warm up: buffers, caches
    before = rss_kib(pid)
    asyncio.run(_bad_scram_logins(port, FLOOD))
    asyncio.run(_random_sasl_payloads(port, FLOOD))
    started = time.monotonic()
    assert admin_client(cluster).list_topics(timeout=5).brokers
    assert time.monotonic() - started < 2
    assert cluster.procs[1].poll() is None
    assert rss_kib(pid) - before < 20 * 1024, "broker memory grew by more than 20 MiB"
    log = (cluster.state.broker_dir(1) / "broker.log").read_text(errors="replace")
    assert log.count("failed authentication of alice from 127.0.0.1 with SCRAM-SHA-256") >= FLOOD

"""Certificates for a local TLS cluster: a private CA, the brokers' certificate, an admin's.

A local cluster has no certificates of its own, and asking users to run openssl first would
make `kctl cluster up --security-protocol SASL_SSL` a chore, so kctl makes a throwaway CA in
`<cluster>/tls/` and signs what the listeners and the admin client need with it. Clients
trust the cluster by trusting that CA (`ssl.ca.location=<cluster>/tls/ca.pem`), as they would
a company CA. One broker certificate serves every broker: each listens on a loopback address
of its own (127.0.1.ID, see brokerd.state.cluster_plan) and librdkafka checks the host name it
connected to against the certificate's SANs (its `ssl.endpoint.identification.algorithm` is
`https` by default), so the SANs are `localhost`, `127.0.0.1` and every 127.0.1.ID.

Keys are EC P-256 (fast to make, understood by OpenSSL and Python's ssl), unencrypted, and
written readable by their owner only.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from brokerd.state.cluster_plan import BROKER_ADDRESSES
from kctl.cluster.brokerview import HOST

DIRECTORY = "tls"
CA_NAME = "kctl local CA"
BROKER_NAME = "localhost"
VALID_DAYS = 3650  # a local cluster's certificates should not expire under a running demo
CLOCK_SKEW = datetime.timedelta(hours=1)

Key = ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class TlsFiles:
    """Where the PEM files of one cluster are (client_* only when a client certificate was made)."""

    ca_cert: Path  # clients' ssl.ca.location, brokers' ssl.truststore.location
    ca_key: Path
    broker_keystore: Path  # brokers' ssl.keystore.location: private key, certificate, CA
    client_cert: Path | None = None
    client_key: Path | None = None


def generate(cluster_dir: Path, client_cn: str | None = None) -> TlsFiles:
    """A CA and a broker certificate under `<cluster>/tls/`; with `client_cn`, also a client
    certificate whose subject is `CN=<client_cn>` (the principal `User:CN=<client_cn>` on an
    SSL listener)."""
    directory = Path(cluster_dir) / DIRECTORY
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _new_key()
    ca_cert = _ca_certificate(ca_key)
    files = TlsFiles(directory / "ca.pem", directory / "ca.key", directory / "broker.pem")
    _write(files.ca_cert, _cert_pem(ca_cert), 0o644)
    _write(files.ca_key, _key_pem(ca_key), 0o600)
    broker_key = _new_key()
    broker_cert = _issue(
        ca_cert,
        ca_key,
        broker_key,
        BROKER_NAME,
        ExtendedKeyUsageOID.SERVER_AUTH,
        [x509.DNSName("localhost"), *(x509.IPAddress(address) for address in _loopback_addresses())],
    )
    _write(files.broker_keystore, _key_pem(broker_key) + _cert_pem(broker_cert) + _cert_pem(ca_cert), 0o600)
    if client_cn is None:
        return files
    client_key = _new_key()
    client_cert = _issue(ca_cert, ca_key, client_key, client_cn, ExtendedKeyUsageOID.CLIENT_AUTH, [])
    client_cert_file = directory / f"{client_cn}.pem"
    client_key_file = directory / f"{client_cn}.key"
    _write(client_cert_file, _cert_pem(client_cert), 0o644)
    _write(client_key_file, _key_pem(client_key), 0o600)
    return TlsFiles(files.ca_cert, files.ca_key, files.broker_keystore, client_cert_file, client_key_file)


def _new_key() -> Key:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(subject: x509.Name, issuer: x509.Name, key: Key) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
    )


def _ca_certificate(key: Key) -> x509.Certificate:
    name = _name(CA_NAME)
    return (
        _builder(name, name, key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )


def _issue(
    ca_cert: x509.Certificate,
    ca_key: Key,
    key: Key,
    common_name: str,
    usage: x509.ObjectIdentifier,
    names: list[x509.GeneralName],
) -> x509.Certificate:
    """A leaf certificate signed by the CA, for a server or a client (`usage`)."""
    builder = (
        _builder(_name(common_name), ca_cert.subject, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: Key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, mode: int) -> None:
    """Created with `mode` from the first byte, so a key is never briefly readable by others."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, mode)


def _loopback_addresses() -> list[ipaddress.IPv4Address]:
    """127.0.0.1 (clients, services) and every address a broker of a local cluster may have."""
    brokers = ipaddress.IPv4Network(BROKER_ADDRESSES)
    return [ipaddress.IPv4Address(HOST), *(brokers.network_address + i for i in range(1, 255))]

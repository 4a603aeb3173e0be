"""RegistryClient against a fake registry: an in-process HTTP server answering canned,
Confluent-shaped JSON and recording what it was asked."""

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from schemaregistry.client import (
    CONTENT_TYPE,
    RegistryClient,
    RegistryClientError,
    RegistryError,
    RegistryUnreachable,
)
from schemaregistry.serde import Encoder

pytestmark = pytest.mark.unit


@dataclass
class Asked:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeRegistry:
    """Answers (method, path) from `answers`: (status, JSON body or raw bytes); 404 otherwise."""

    url: str
    answers: dict[tuple[str, str], tuple[int, Any]] = field(default_factory=dict)
    asked: list[Asked] = field(default_factory=list)
    delay: float = 0

    def answer(self, method: str, path: str, body: Any, status: int = 200) -> None:
        self.answers[method, path] = (status, body)


@pytest.fixture
def registry() -> Iterator[FakeRegistry]:
    fake = FakeRegistry(url="")

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            fake.asked.append(Asked(self.command, self.path, dict(self.headers), body))
            time.sleep(fake.delay)
            status, answer = fake.answers.get(
                (self.command, self.path), (404, {"error_code": 404, "message": "HTTP 404 Not Found"})
            )
            data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try:
                self.wfile.write(data)
            except BrokenPipeError:  # the client gave up waiting (the timeout test)
                pass

        do_GET = do_POST = do_PUT = do_DELETE = _handle

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()


def test_subjects_versions_and_one_version(registry: FakeRegistry) -> None:
    registry.answer("GET", "/subjects", ["orders-value"])
    registry.answer("GET", "/subjects?deleted=true", ["gone-value", "orders-value"])
    registry.answer("GET", "/subjects/orders-value/versions", [1, 2])
    latest = {"subject": "orders-value", "version": 2, "id": 7, "schema": '"string"'}
    registry.answer("GET", "/subjects/orders-value/versions/latest", latest)
    registry.answer("GET", "/subjects/orders-value/versions/1", {**latest, "version": 1, "id": 5})
    client = RegistryClient(registry.url)

    assert client.subjects() == ["orders-value"]
    assert client.subjects(deleted=True) == ["gone-value", "orders-value"]
    assert client.versions("orders-value") == [1, 2]
    assert client.version("orders-value", "latest") == latest
    assert client.version("orders-value", 1)["id"] == 5
    assert {asked.headers["Accept"].split(",")[0] for asked in registry.asked} == {CONTENT_TYPE}
    assert all("Authorization" not in asked.headers for asked in registry.asked)


def test_register_sends_the_schema_type_and_references_and_returns_the_id(registry: FakeRegistry) -> None:
    registry.answer("POST", "/subjects/orders-value/versions", {"id": 12})
    registry.answer("POST", "/subjects/people-value/versions", {"id": 13, "version": 1, "schema": "..."})
    client = RegistryClient(registry.url)

    assert client.register("orders-value", '"string"') == 12
    reference = {"name": "address.proto", "subject": "address", "version": 1}
    assert client.register("people-value", "syntax...", "protobuf", [reference]) == 13

    avro, protobuf = registry.asked
    assert avro.body == {"schema": '"string"'}  # no schemaType: registries before 5.5 refuse it
    assert avro.headers["Content-Type"] == CONTENT_TYPE
    assert protobuf.body == {"schema": "syntax...", "schemaType": "PROTOBUF", "references": [reference]}


def test_subjects_are_escaped_as_one_path_segment(registry: FakeRegistry) -> None:
    registry.answer("GET", "/subjects/a%2Fb%20c%3F/versions", [1])
    registry.answer("GET", "/config/%C3%A9t%C3%A9", {"compatibilityLevel": "FULL"})
    client = RegistryClient(registry.url)
    assert client.versions("a/b c?") == [1]
    assert client.config("été") == {"compatibilityLevel": "FULL"}


def test_lookup_schema_by_id_and_compatibility_check(registry: FakeRegistry) -> None:
    found = {"subject": "s", "id": 3, "version": 2, "schema": '"int"'}
    registry.answer("POST", "/subjects/s", found)
    registry.answer("GET", "/schemas/ids/3", {"schema": '"int"'})
    verdict = {"is_compatible": False, "messages": ["{errorType:'TYPE_MISMATCH'}"]}
    registry.answer("POST", "/compatibility/subjects/s/versions/latest?verbose=true", verdict)
    registry.answer("POST", "/compatibility/subjects/s/versions/2", {"is_compatible": True})
    client = RegistryClient(registry.url)

    assert client.lookup("s", '"int"') == found
    assert client.schema_by_id(3) == {"schema": '"int"'}
    assert client.check("s", "latest", '{"type": "object"}', "JSON") == verdict
    assert client.check("s", 2, '"long"', verbose=False) == {"is_compatible": True}
    assert registry.asked[2].body == {"schema": '{"type": "object"}', "schemaType": "JSON"}


def test_deletes_soft_and_permanent(registry: FakeRegistry) -> None:
    registry.answer("DELETE", "/subjects/s", [1, 2])
    registry.answer("DELETE", "/subjects/s?permanent=true", [1, 2])
    registry.answer("DELETE", "/subjects/s/versions/2", 2)
    registry.answer("DELETE", "/subjects/s/versions/2?permanent=true", 2)
    client = RegistryClient(registry.url)
    assert client.delete_subject("s") == [1, 2]
    assert client.delete_subject("s", permanent=True) == [1, 2]
    assert client.delete_version("s", 2) == 2
    assert client.delete_version("s", "2", permanent=True) == 2


def test_config_and_mode_global_and_per_subject(registry: FakeRegistry) -> None:
    registry.answer("GET", "/config", {"compatibilityLevel": "BACKWARD"})
    registry.answer("GET", "/config/s?defaultToGlobal=true", {"compatibilityLevel": "BACKWARD"})
    registry.answer("PUT", "/config/s", {"compatibility": "FULL"})
    registry.answer("DELETE", "/config/s", {"compatibilityLevel": "FULL"})
    registry.answer("GET", "/mode", {"mode": "READWRITE"})
    registry.answer("PUT", "/mode?force=true", {"mode": "IMPORT"})
    registry.answer("PUT", "/mode/s", {"mode": "READONLY"})
    client = RegistryClient(registry.url)

    assert client.config() == {"compatibilityLevel": "BACKWARD"}
    assert client.config("s", default_to_global=True) == {"compatibilityLevel": "BACKWARD"}
    assert client.set_config("FULL", "s") == {"compatibility": "FULL"}
    assert client.delete_config("s") == {"compatibilityLevel": "FULL"}
    assert client.mode() == {"mode": "READWRITE"}
    assert client.set_mode("IMPORT", force=True) == {"mode": "IMPORT"}
    assert client.set_mode("READONLY", "s") == {"mode": "READONLY"}
    assert [asked.body for asked in registry.asked if asked.method == "PUT"] == [
        {"compatibility": "FULL"},
        {"mode": "IMPORT"},
        {"mode": "READONLY"},
    ]


def test_basic_auth_from_arguments_or_from_the_url(registry: FakeRegistry) -> None:
    registry.answer("GET", "/subjects", [])
    RegistryClient(registry.url, "alice", "sécret").subjects()
    with_userinfo = registry.url.replace("http://", "http://bob:p%40ss@")
    client = RegistryClient(with_userinfo)
    client.subjects()

    assert client.url == registry.url
    decoded = [
        base64.b64decode(asked.headers["Authorization"].removeprefix("Basic ")).decode()
        for asked in registry.asked
    ]
    assert decoded == ["alice:sécret", "bob:p@ss"]


def test_an_error_answer_raises_registry_error_with_the_servers_message(registry: FakeRegistry) -> None:
    not_found = {"error_code": 40401, "message": "Subject 'nope' not found."}
    registry.answer("GET", "/subjects/nope/versions", not_found, 404)
    incompatible = 'Schema being registered is incompatible with an earlier schema for subject "s"'
    registry.answer("POST", "/subjects/s/versions", {"error_code": 409, "message": incompatible}, 409)
    registry.answer("GET", "/mode", b"<html>Bad Gateway</html>", 502)
    client = RegistryClient(registry.url)

    with pytest.raises(RegistryError) as raised:
        client.versions("nope")
    assert (raised.value.status, raised.value.error_code) == (404, 40401)
    assert str(raised.value) == "Subject 'nope' not found."

    with pytest.raises(RegistryError, match="incompatible") as raised:
        client.register("s", '"int"')
    assert (raised.value.status, raised.value.error_code) == (409, 409)

    with pytest.raises(RegistryError) as raised:
        client.mode()
    assert (raised.value.status, raised.value.error_code, str(raised.value)) == (
        502,
        502,
        "<html>Bad Gateway</html>",
    )


def test_an_answer_that_is_not_json_is_a_registry_error(registry: FakeRegistry) -> None:
    registry.answer("GET", "/subjects", b"<html>a login page</html>")
    with pytest.raises(RegistryError, match="not JSON"):
        RegistryClient(registry.url).subjects()


def test_connection_refused_raises_registry_unreachable() -> None:
    with socket.socket() as sock:  # a port nobody listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with pytest.raises(RegistryUnreachable) as raised:
            RegistryClient(url).subjects()
    assert raised.value.url == url
    assert str(raised.value) == f"schema registry {url} unreachable: Connection refused"
    assert isinstance(raised.value, RegistryClientError)


def test_a_registry_slower_than_the_timeout_is_unreachable(registry: FakeRegistry) -> None:
    registry.answer("GET", "/subjects", [])
    registry.delay = 1
    started = time.monotonic()
    with pytest.raises(RegistryUnreachable, match="timed out"):
        RegistryClient(registry.url, timeout=0.2).subjects()
    assert time.monotonic() - started < 0.9


def test_parsed_schema_by_id_resolves_references_transitively_and_is_cached(registry: FakeRegistry) -> None:
    country = {"type": "enum", "name": "Country", "namespace": "geo", "symbols": ["FR", "DE"]}
    address = {
        "type": "record",
        "name": "Address",
        "namespace": "geo",
        "fields": [{"name": "zip", "type": "string"}, {"name": "country", "type": "geo.Country"}],
    }
    order = {"type": "record", "name": "Order", "fields": [{"name": "to", "type": "geo.Address"}]}
    to_address = [{"name": "geo.Address", "subject": "address", "version": 1}]
    to_country = [{"name": "geo.Country", "subject": "country", "version": 2}]
    registry.answer("GET", "/schemas/ids/5", {"schema": json.dumps(order), "references": to_address})
    address_v1 = {"subject": "address", "version": 1, "id": 4, "schema": json.dumps(address)}
    registry.answer("GET", "/subjects/address/versions/1", {**address_v1, "references": to_country})
    country_v2 = {"subject": "country", "version": 2, "id": 3, "schema": json.dumps(country)}
    registry.answer("GET", "/subjects/country/versions/2", country_v2)
    client = RegistryClient(registry.url)

    parsed = client.parsed_schema_by_id(5)
    assert client.parsed_schema_by_id(5) is parsed
    assert [asked.path for asked in registry.asked] == [
        "/schemas/ids/5",
        "/subjects/address/versions/1",
        "/subjects/country/versions/2",
    ]
    assert parsed.schema_type == "AVRO"
    payload = Encoder(5, parsed).encode({"to": {"zip": "75001", "country": "FR"}})
    assert payload == b"\x00\x00\x00\x00\x05\x0a75001\x00"


def test_parsed_schema_by_id_of_another_type(registry: FakeRegistry) -> None:
    registry.answer("GET", "/schemas/ids/6", {"schema": '{"type": "integer"}', "schemaType": "JSON"})
    parsed = RegistryClient(registry.url).parsed_schema_by_id(6)
    assert parsed.schema_type == "JSON"
    assert Encoder(6, parsed).encode(42) == b"\x00\x00\x00\x00\x0642"


def test_a_cycle_of_references_from_a_misbehaving_registry_ends(registry: FakeRegistry) -> None:
    refer = {
        "a": [{"name": "b.json", "subject": "b", "version": 1}],
        "b": [{"name": "a.json", "subject": "a", "version": 1}],
    }
    registry.answer("GET", "/schemas/ids/7", {"schema": "{}", "schemaType": "JSON", "references": refer["b"]})
    for subject in ("a", "b"):
        answer = {"subject": subject, "version": 1, "id": 1, "schema": "{}", "references": refer[subject]}
        registry.answer("GET", f"/subjects/{subject}/versions/1", answer)
    assert RegistryClient(registry.url).parsed_schema_by_id(7).schema_type == "JSON"
    assert len(registry.asked) == 3


def test_an_answer_without_the_fields_expected_is_a_registry_error(registry: FakeRegistry) -> None:
    registry.answer("GET", "/schemas/ids/8", {"nothing": "here"})
    registry.answer("POST", "/subjects/s/versions", ["not", "an", "object"])
    client = RegistryClient(registry.url)
    with pytest.raises(RegistryError, match="unexpected answer from the registry"):
        client.parsed_schema_by_id(8)
    with pytest.raises(RegistryError, match="unexpected answer from the registry"):
        client.register("s", '"int"')

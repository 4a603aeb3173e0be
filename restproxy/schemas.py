"""The registry's schemas as the embedded formats need them: registered from a request's schema
text under the topic's subject (TopicNameStrategy: TOPIC-key, TOPIC-value), or found by id or
by subject and version, each ready to encode with (restproxy.embedded.Schema).

Each user asks the registry as themselves (their HTTP basic credentials, which a secured
registry checks), with caches of their own: a schema one user registered or read is never
served to another from memory. The calls block on HTTP: routes run them in a worker thread.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Generic, TypeVar

from restproxy import errors
from restproxy.clients import MAX_USERS, Credentials
from restproxy.embedded import Format, Schema
from restproxy.errors import RestError
from schemaregistry.client import RegistryClient, RegistryError, RegistryUnreachable
from schemaregistry.serde import Encoder, NoSuchMessage

K = TypeVar("K")
V = TypeVar("V")
MAX_CACHED = 1024  # schemas per user: requests name a handful, a bound keeps a flood from growing it


def subject(topic: str, is_key: bool) -> str:
    return f"{topic}-key" if is_key else f"{topic}-value"


class SchemaSource:
    def __init__(self, url: str | None) -> None:
        self.url = url
        self._users: OrderedDict[Credentials | None, _UserSchemas] = OrderedDict()
        self._lock = threading.Lock()

    def registered(self, credentials: Credentials | None, subject: str, text: str, fmt: Format) -> Schema:
        """Register `text` under the subject (its id if it is there already)."""
        return self._user(credentials).registered(subject, text, fmt)

    def by_id(self, credentials: Credentials | None, schema_id: int, fmt: Format | None) -> Schema:
        """The schema with this id; one of another type than `fmt` (if given) is refused."""
        return self._user(credentials).by_id(schema_id, fmt)

    def by_version(
        self, credentials: Credentials | None, subject: str, version: int | str, fmt: Format | None
    ) -> Schema:
        """A version of the subject ("latest" too)."""
        return self._user(credentials).by_version(subject, version, fmt)

    def _user(self, credentials: Credentials | None) -> _UserSchemas:
        if self.url is None:
            raise errors.invalid_schema("this proxy has no schema registry (start it with --schema-registry)")
        with self._lock:
            if credentials not in self._users:
                if len(self._users) >= MAX_USERS:
                    self._users.popitem(last=False)
                user, password = credentials if credentials is not None else (None, None)
                self._users[credentials] = _UserSchemas(RegistryClient(self.url, user, password))
            self._users.move_to_end(credentials)
            return self._users[credentials]


class _UserSchemas:
    def __init__(self, client: RegistryClient) -> None:
        self.client = client
        self._ids: _Bounded[tuple[str, str, str], int] = _Bounded()
        self._schemas: _Bounded[int, Schema] = _Bounded()

    def registered(self, subject: str, text: str, fmt: Format) -> Schema:
        key = (subject, str(fmt.schema_type), text)
        schema_id = self._ids.get(key)
        if schema_id is None:
            schema_id = _asking(lambda: self.client.register(subject, text, str(fmt.schema_type)))
            self._ids.put(key, schema_id)
        return _with_subject(self.by_id(schema_id, fmt), subject, None)

    def by_id(self, schema_id: int, fmt: Format | None) -> Schema:
        schema = self._schemas.get(schema_id)
        if schema is None:
            schema = _asking(lambda: self._parsed(schema_id))
            self._schemas.put(schema_id, schema)
        if fmt is not None and schema.format is not fmt:
            raise errors.invalid_schema(
                f"schema {schema_id} is a {schema.format.value} schema, not {fmt.value} as the request says"
            )
        return schema

    def by_version(self, subject: str, version: int | str, fmt: Format | None) -> Schema:
        found: dict[str, Any] = _asking(lambda: self.client.version(subject, version))
        try:
            schema_id, number = int(found["id"]), int(found["version"])
        except (KeyError, TypeError, ValueError):
            raise errors.invalid_schema(f"the registry's answer for {subject} is not a version") from None
        return _with_subject(self.by_id(schema_id, fmt), subject, number)

    def _parsed(self, schema_id: int) -> Schema:
        parsed = self.client.parsed_schema_by_id(schema_id)
        try:
            encoder = Encoder(schema_id, parsed)
        except NoSuchMessage as exc:
            raise errors.invalid_schema(f"schema {schema_id}: {exc}") from None
        return Schema(schema_id, Format.of_schema_type(parsed.schema_type), encoder)


def _with_subject(schema: Schema, subject: str, version: int | None) -> Schema:
    return Schema(schema.schema_id, schema.format, schema.encoder, subject, version)


def _asking(call: Any) -> Any:
    """The registry's answer, or Confluent's error for what kept it from answering."""
    try:
        return call()
    except RegistryUnreachable as exc:
        raise RestError(503, 503, f"Schema registry unavailable: {exc}") from None
    except RegistryError as exc:
        raise _registry_error(exc) from None
    except ValueError as exc:  # InvalidSchema among them: a registered schema that does not parse
        raise errors.invalid_schema(str(exc)) from None


def _registry_error(exc: RegistryError) -> RestError:
    if exc.status in (401, 403):
        return errors.not_authorized(f"schema registry: {exc.message}")
    if exc.status >= 500 or exc.status < 400:
        return RestError(503, 503, f"Schema registry error: {exc.message}")
    return errors.invalid_schema(exc.message)  # not found, invalid, incompatible: the request's schema


class _Bounded(Generic[K, V]):
    """A dict that forgets its oldest entry past MAX_CACHED."""

    def __init__(self) -> None:
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            if len(self._entries) > MAX_CACHED:
                self._entries.popitem(last=False)

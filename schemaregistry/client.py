"""A small client of Confluent Schema Registry's REST API, for kctl.

It speaks to this package's registry and to Confluent's or Karapace's alike, and is built on
the standard library alone (urllib.request): kctl's commands start in a fraction of a second
and the registry's few JSON calls need nothing more. Answers are returned as the API gives
them (dicts, lists, ints); only `parsed_schema_by_id` goes further, resolving a schema's
references so records written with it can be encoded and decoded.
"""

import base64
import contextlib
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # parsing schemas imports Avro, Protobuf and JSON Schema libraries: only when asked
    from schemaregistry.schemas import ParsedSchema

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
# what Confluent's clients accept: the versioned type first, plain JSON as the last resort
ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"

Reference = Mapping[str, Any]  # {"name": ..., "subject": ..., "version": ...}


class RegistryClientError(Exception):
    """Anything that kept a registry call from giving an answer; kctl catches this one."""


class RegistryError(RegistryClientError):
    """The registry answered with an error: its HTTP status, Confluent error code and message.

    `str()` is the server's own message (e.g. "Subject 'orders-value' not found."), which is
    what a user should see."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message

    def __str__(self) -> str:
        return self.message


class RegistryUnreachable(RegistryClientError):
    """No answer at all: connection refused, name not resolved, or timed out."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(url, reason)
        self.url = url
        self.reason = reason

    def __str__(self) -> str:
        return f"schema registry {self.url} unreachable: {self.reason}"


class RegistryClient:
    """One registry, its credentials and a cache of the schemas read by id (ids never change)."""

    def __init__(
        self, url: str, username: str | None = None, password: str | None = None, timeout: float = 10
    ) -> None:
        self.url, url_user, url_password = _split_userinfo(url.rstrip("/"))
        if username is None and url_user is not None:
            username, password = url_user, url_password
        self.timeout = timeout
        self._authorization = _basic_auth(username, password or "") if username is not None else None
        self._parsed: dict[int, ParsedSchema] = {}
        self._versions: dict[tuple[str, int | str], dict[str, Any]] = {}

    # --- subjects and versions

    def subjects(self, deleted: bool = False) -> list[str]:
        """The subjects, soft-deleted ones too when `deleted`."""
        return self._call("GET", "/subjects", query=_flag("deleted", deleted))

    def versions(self, subject: str) -> list[int]:
        return self._call("GET", f"/subjects/{_quote(subject)}/versions")

    def version(self, subject: str, version: int | str, deleted: bool = False) -> dict[str, Any]:
        """One version of a subject: a number, "latest" or -1 (the latest too); soft-deleted
        ones too when `deleted`."""
        path = f"/subjects/{_quote(subject)}/versions/{_quote(str(version))}"
        return self._call("GET", path, query=_flag("deleted", deleted))

    def register(
        self, subject: str, schema_text: str, schema_type: str = "AVRO", references: Sequence[Reference] = ()
    ) -> int:
        """Register a schema under a subject and return its id (an existing one if it is already there)."""
        body = _schema_body(schema_text, schema_type, references)
        answer = self._call("POST", f"/subjects/{_quote(subject)}/versions", body)
        with _expecting(answer):
            return int(answer["id"])

    def lookup(
        self, subject: str, schema_text: str, schema_type: str = "AVRO", references: Sequence[Reference] = ()
    ) -> dict[str, Any]:
        """The subject's version holding this schema: {subject, id, version, schema, ...}."""
        body = _schema_body(schema_text, schema_type, references)
        return self._call("POST", f"/subjects/{_quote(subject)}", body)

    def schema_by_id(self, schema_id: int) -> dict[str, Any]:
        """{schema, schemaType?, references?}: schemaType is absent for Avro."""
        return self._call("GET", f"/schemas/ids/{int(schema_id)}")

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Soft-delete a subject, or hard-delete one already soft-deleted; returns the versions deleted."""
        query = _flag("permanent", permanent)
        return self._call("DELETE", f"/subjects/{_quote(subject)}", query=query)

    def delete_version(self, subject: str, version: int | str, permanent: bool = False) -> int:
        path = f"/subjects/{_quote(subject)}/versions/{_quote(str(version))}"
        return int(self._call("DELETE", path, query=_flag("permanent", permanent)))

    def check(
        self,
        subject: str,
        version: int | str | None,
        schema_text: str,
        schema_type: str = "AVRO",
        verbose: bool = True,
        references: Sequence[Reference] = (),
    ) -> dict[str, Any]:
        """Is this schema compatible with a version ("latest" included), or with every version
        (`version` None)? {is_compatible, messages?}."""
        path = f"/compatibility/subjects/{_quote(subject)}/versions"
        if version is not None:
            path += f"/{_quote(str(version))}"
        body = _schema_body(schema_text, schema_type, references)
        return self._call("POST", path, body, query=_flag("verbose", verbose))

    # --- compatibility levels and modes

    def config(self, subject: str | None = None, default_to_global: bool = False) -> dict[str, Any]:
        """{compatibilityLevel}: the global level, or a subject's own (40408 when it has none,
        unless `default_to_global`)."""
        query = _flag("defaultToGlobal", default_to_global)
        return self._call("GET", _scoped("/config", subject), query=query)

    def set_config(self, level: str, subject: str | None = None) -> dict[str, Any]:
        body = {"compatibility": level}
        return self._call("PUT", _scoped("/config", subject), body)

    def delete_config(self, subject: str | None = None) -> dict[str, Any]:
        """Drop a subject's own level (it falls back to the global one); returns the level dropped."""
        return self._call("DELETE", _scoped("/config", subject))

    def mode(self, subject: str | None = None) -> dict[str, Any]:
        return self._call("GET", _scoped("/mode", subject))

    def set_mode(self, mode: str, subject: str | None = None, force: bool = False) -> dict[str, Any]:
        """READWRITE, READONLY or IMPORT; `force` sets IMPORT on a registry that has schemas."""
        body = {"mode": mode}
        return self._call("PUT", _scoped("/mode", subject), body, query=_flag("force", force))

    # --- schemas ready to encode and decode with

    def parsed_schema_by_id(self, schema_id: int) -> "ParsedSchema":
        """The schema with this id, parsed with its references (each fetched by subject and
        version, recursively). Cached: an id always names the same schema."""
        if schema_id not in self._parsed:
            from schemaregistry import schemas

            answer = self.schema_by_id(schema_id)
            with _expecting(answer):
                referenced = self._referenced_texts(answer.get("references") or [], {}, set())
                schema_type, text = answer.get("schemaType") or "AVRO", answer["schema"]
            self._parsed[schema_id] = schemas.parse(schema_type, text, referenced)
        return self._parsed[schema_id]

    def _referenced_texts(
        self, references: Sequence[Reference], found: dict[str, str], pending: set[str]
    ) -> dict[str, str]:
        """name -> schema text for `references` and theirs, depth first so that a schema comes
        after the ones it refers to (the order Avro's named types must be defined in).
        `pending` holds the names being resolved: a registry answering with a cycle of
        references cannot send this into endless recursion."""
        for reference in references:
            name = reference["name"]
            if name in found or name in pending:
                continue
            pending.add(name)
            referenced = self._version_cached(reference["subject"], reference["version"])
            self._referenced_texts(referenced.get("references") or [], found, pending)
            found[name] = referenced["schema"]
        return found

    def _version_cached(self, subject: str, version: int | str) -> dict[str, Any]:
        if (subject, version) not in self._versions:
            self._versions[subject, version] = self.version(subject, version)
        return self._versions[subject, version]

    # --- HTTP

    def _call(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, query: Mapping[str, str] = {}
    ) -> Any:
        request = self._request(method, path, body, query)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return _json_answer(response.status, response.read())
        except urllib.error.HTTPError as error:
            with error:
                raise _registry_error(error.code, error.read()) from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            raise RegistryUnreachable(self.url, _reason(error)) from None

    def _request(
        self, method: str, path: str, body: Mapping[str, Any] | None, query: Mapping[str, str]
    ) -> urllib.request.Request:
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"Accept": ACCEPT}
        if self._authorization is not None:
            headers["Authorization"] = self._authorization
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = CONTENT_TYPE
        return urllib.request.Request(url, data=data, headers=headers, method=method)


def _split_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """http://user:secret@host:8081 -> (http://host:8081, user, secret), as Confluent's clients
    accept credentials in the URL (urllib would try to connect to 'user:secret@host')."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url, None, None
    netloc = parts.netloc.rpartition("@")[2]
    bare = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    password = urllib.parse.unquote(parts.password) if parts.password is not None else None
    return bare, urllib.parse.unquote(parts.username), password


def _basic_auth(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def _quote(segment: str) -> str:
    """A path segment, every reserved character escaped: subjects may hold '/', '?' or spaces."""
    return urllib.parse.quote(segment, safe="")


def _scoped(prefix: str, subject: str | None) -> str:
    return prefix if subject is None else f"{prefix}/{_quote(subject)}"


def _flag(name: str, value: bool) -> dict[str, str]:
    """A boolean query parameter, sent only when true (false is every endpoint's default)."""
    return {name: "true"} if value else {}


def _schema_body(schema_text: str, schema_type: str, references: Sequence[Reference]) -> dict[str, Any]:
    """The registration body; schemaType is left out for Avro, which registries before 5.5 require."""
    body: dict[str, Any] = {"schema": schema_text}
    if schema_type.upper() != "AVRO":
        body["schemaType"] = schema_type.upper()
    if references:
        body["references"] = [dict(reference) for reference in references]
    return body


@contextlib.contextmanager
def _expecting(answer: Any) -> Iterator[None]:
    """Reading fields of an answer: one without them (another service at the registry's URL,
    a proxy's page) is a RegistryError, not a KeyError deep in kctl."""
    try:
        yield
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        shown = json.dumps(answer)[:200]
        raise RegistryError(200, 0, f"unexpected answer from the registry ({error!r}): {shown}") from None


def _json_answer(status: int, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise RegistryError(status, 0, f"the registry's answer is not JSON: {raw[:200]!r}") from None


def _registry_error(status: int, raw: bytes) -> RegistryError:
    """Confluent's error body {"error_code", "message"}; a proxy's HTML or an empty body keeps
    the HTTP status as its code and as much of the text as is readable."""
    try:
        answer = json.loads(raw)
        return RegistryError(status, int(answer["error_code"]), str(answer["message"]))
    except (ValueError, TypeError, KeyError):
        text = raw.decode("utf-8", "replace").strip()[:200]
        return RegistryError(status, status, text or f"HTTP {status}")


def _reason(error: BaseException) -> str:
    """'Connection refused' rather than '<urlopen error [Errno 111] Connection refused>'."""
    if isinstance(error, urllib.error.URLError) and not isinstance(error.reason, str):
        error = error.reason
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__

"""What API v3's resources share: the cluster id in every path (one cluster, the id its brokers
report; any other is 404), resources' `kind` and `metadata{self, resource_name}`, lists as
`{"kind": "...List", "metadata": {"self", "next"}, "data": [...]}`, `{"related": URL}` links
to other resources, and request bodies read as application/json only (else 415)."""

from __future__ import annotations

import urllib.parse
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel

from restproxy.bodies import media_type, parsed_json, unsupported_media_type, validated
from restproxy.clients import Credentials
from restproxy.cluster import metadata
from restproxy.context import ProxyContext
from restproxy.errors import RestError
from restproxy.kafkaerrors import UNKNOWN_TOPIC_OR_PARTITION

M = TypeVar("M", bound=BaseModel)


class V3:
    """The routes' view of the one cluster: its id (asked once: it never changes) and URLs."""

    def __init__(self, context: ProxyContext) -> None:
        self.context = context
        self._cluster_id: str | None = None

    async def cluster_id(self, credentials: Credentials | None) -> str:
        if self._cluster_id is None:
            self._cluster_id = (await metadata(self.context, credentials)).cluster_id or ""
        return self._cluster_id

    async def checked(self, request: Request, cluster_id: str) -> Credentials | None:
        """The request's user, once the path's cluster id is the cluster's (else 404)."""
        credentials = self.context.credentials(request)
        if cluster_id != await self.cluster_id(credentials):
            raise RestError(404, 404, f"Cluster {cluster_id} cannot be found.")
        return credentials

    def url(self, request: Request, *segments: object) -> str:
        """This proxy's URL of a v3 resource (the advertised one, else the one the client used)."""
        base = self.context.settings.advertised_url or str(request.base_url)
        path = "/".join(urllib.parse.quote(str(segment), safe="") for segment in segments)
        return f"{base.rstrip('/')}/v3/clusters/{path}"

    def resource(
        self, request: Request, kind: str, cluster_id: str, *path: object, **fields: Any
    ) -> dict[str, Any]:
        """A resource at /v3/clusters/CLUSTER/PATH: its kind, metadata and fields. Its
        resource name is the CRN of the path's (type, name) pairs."""
        segments = (cluster_id, *path)
        names = [f"{_crn_type(path[i])}={path[i + 1]}" for i in range(0, len(path) - 1, 2)]
        crn = "/".join([f"crn:///kafka={cluster_id}", *names])
        metadata = {"self": self.url(request, *segments), "resource_name": crn}
        return {"kind": kind, "metadata": metadata, "cluster_id": cluster_id, **fields}

    def related(self, request: Request, *segments: object) -> dict[str, str]:
        return {"related": self.url(request, *segments)}


def topic_not_found() -> RestError:
    """v3's unknown topic: Kafka's UnknownTopicOrPartition, as Confluent's mapper answers it."""
    return RestError(404, 40403, UNKNOWN_TOPIC_OR_PARTITION)


def listing(kind: str, self_url: str, data: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"self": self_url, "next": None}, "data": data}


async def json_body(request: Request, model: type[M]) -> M:
    """A v3 body: application/json (else 415), JSON (else 400), the model's shape (else 422)."""
    if media_type(request) != "application/json":
        raise unsupported_media_type()
    return validated(model, parsed_json(await request.body()))


def _crn_type(collection: object) -> str:
    """A CRN's type for a path's collection: topics -> topic, consumer-groups -> consumer-group."""
    name = str(collection)
    return name[:-1] if name.endswith("s") else name

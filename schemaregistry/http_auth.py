"""The registry asks its users for HTTP basic credentials when the cluster is secured: a
request without valid ones gets 401 and Confluent's error body, before any handler runs."""

from __future__ import annotations

from anyio import to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from schemaregistry.authentication import ClusterLogin
from schemaregistry.http_limits import refuse

CHALLENGE = [(b"www-authenticate", b'Basic realm="SchemaRegistry"')]


class BasicAuth:
    def __init__(self, app: ASGIApp, login: ClusterLogin) -> None:
        self.app = app
        self.login = login

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        user = await to_thread.run_sync(self.login.check, header)  # a login may wait on the cluster
        if user is None:
            await refuse(send, 401, "Unauthorized", CHALLENGE)
            return
        await self.app(scope, receive, send)

"""A service asks its users for HTTP basic credentials when the cluster is secured: a request
without valid ones gets 401 and Confluent's error body before any handler runs; one with them
carries the user's name and password in the ASGI scope (`scope["user_credentials"]`), for a
service that acts on the brokers as its users (the REST proxy)."""

from __future__ import annotations

from anyio import to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from httpservice.clusterlogin import ClusterLogin
from httpservice.limits import refuse


class BasicAuth:
    def __init__(self, app: ASGIApp, login: ClusterLogin, realm: str) -> None:
        self.app = app
        self.login = login
        self.challenge = [(b"www-authenticate", f'Basic realm="{realm}"'.encode())]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        credentials = await to_thread.run_sync(self.login.check, header)  # a login may wait on the cluster
        if credentials is None:
            await refuse(send, 401, "Unauthorized", self.challenge)
            return
        await self.app({**scope, "user_credentials": credentials}, receive, send)

"""One request as a handler sees it: the decoded header and body, and the session it came
in on (Kafka's RequestContext): who sent it, from which host, over which listener."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka.protocol.api_message import ApiMessage

from brokerd.protocol.codec import RequestHeader
from brokerd.security.principal import Session

if TYPE_CHECKING:
    from brokerd.ports.services import BrokerServices


@dataclass
class Request:
    header: RequestHeader
    body: ApiMessage
    session: Session

    @property
    def client_host(self) -> str:
        return self.session.client_host


# A request handler: a module's ``handle``, given the broker's services and the request.
Handler = Callable[["BrokerServices", Request], Awaitable[dict | None]]

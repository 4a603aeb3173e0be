"""One request as a handler sees it: the decoded header and body, and the session it came
in on (Kafka's RequestContext): who sent it, from which host, over which listener."""

from __future__ import annotations

from dataclasses import dataclass

from kafka.protocol.api_message import ApiMessage

from brokerd.protocol.codec import RequestHeader
from brokerd.security.principal import Session


@dataclass
class Request:
    header: RequestHeader
    body: ApiMessage
    session: Session

    @property
    def client_host(self) -> str:
        return self.session.client_host

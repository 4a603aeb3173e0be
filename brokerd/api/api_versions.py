"""ApiVersions: the version ranges every client negotiates from."""

from __future__ import annotations

from brokerd.api.request import Request
from brokerd.ports.services import BrokerServices
from brokerd.protocol.api_versions import ADVERTISED


async def handle(services: BrokerServices, request: Request) -> dict:
    return {
        "error_code": 0,
        "api_keys": [
            {"api_key": key, "min_version": low, "max_version": high}
            for key, (low, high) in sorted(ADVERTISED.items())
        ],
        "throttle_time_ms": 0,
    }

"""ApiVersions: the version ranges every client negotiates from."""

from brokerd.protocol.api_versions import ADVERTISED


async def handle(broker, request) -> dict:
    return {
        "error_code": 0,
        "api_keys": [
            {"api_key": key, "min_version": low, "max_version": high}
            for key, (low, high) in sorted(ADVERTISED.items())
        ],
        "throttle_time_ms": 0,
    }

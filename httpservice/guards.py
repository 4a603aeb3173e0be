"""What stands in front of every service's routes, in the order requests meet it: HTTP basic
auth with the cluster's users (when the service asks its users to log in), then the limits on
what a request may send; and every error answered in Confluent's shape."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from httpservice.basicauth import BasicAuth
from httpservice.clusterlogin import ClusterLogin
from httpservice.errors import confluent_errors
from httpservice.limits import RequestLimits


def guard(
    app: FastAPI,
    *,
    max_body_bytes: int,
    content_types: tuple[str, ...],
    error_media_type: str,
    login: ClusterLogin | None,
    realm: str,
    response: type[JSONResponse] = JSONResponse,
) -> None:
    """Add the service's middleware and error handlers to `app`, before its routes."""
    app.add_middleware(
        RequestLimits,
        max_body_bytes=max_body_bytes,
        content_types=content_types,
        error_media_type=error_media_type,
    )
    if login is not None:
        app.add_middleware(BasicAuth, login=login, realm=realm)  # added last: runs first
    confluent_errors(app, response)

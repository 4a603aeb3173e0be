"""Kafka Connect's error answers, `{"error_code": <http status>, "message": ...}`
(ConnectExceptionMapper: the error code is the HTTP status)."""

from __future__ import annotations

from httpservice.errors import ServiceError


class ConnectError(ServiceError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, status, message)


def not_found(name: str) -> ConnectError:
    return ConnectError(404, f"Connector {name} not found")


def already_exists(name: str) -> ConnectError:
    return ConnectError(409, f"Connector {name} already exists")


def bad_request(message: str) -> ConnectError:
    return ConnectError(400, message)

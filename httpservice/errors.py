"""Errors as Confluent's services answer them, `{"error_code": ..., "message": ...}`: a
service's own errors, and the framework's (an unknown route, a malformed or incomplete body),
which would otherwise answer in FastAPI's shape that Confluent's clients do not read."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException


class ServiceError(Exception):
    """An answer other than success; `str()` is the message."""

    def __init__(self, http_status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.error_code = error_code
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}


def confluent_errors(app: FastAPI, response: type[JSONResponse] = JSONResponse) -> None:
    """Answer every error in Confluent's shape, with the service's content type."""

    @app.exception_handler(ServiceError)
    def service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return response(exc.body(), status_code=exc.http_status)

    @app.exception_handler(HTTPException)
    def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return response(
            {"error_code": exc.status_code, "message": f"HTTP {exc.status_code} {exc.detail}"},
            status_code=exc.status_code,
        )

    @app.exception_handler(RequestValidationError)
    def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"msg": "invalid request"}
        if first.get("type") == "json_invalid":  # as Confluent's: malformed JSON is a 400
            return response({"error_code": 400, "message": f"Unexpected character: {first['msg']}"}, 400)
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return response({"error_code": 422, "message": f"{where}: {first['msg']}".lstrip(": ")}, 422)

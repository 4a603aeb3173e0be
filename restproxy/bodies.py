"""Request bodies the routes read themselves (the content type picks how the records in them are
read, so FastAPI cannot): their JSON parsed and validated with the same error bodies the app
gives for the bodies FastAPI reads (400 for JSON that does not parse, 422 for the wrong shape)."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from restproxy.errors import RestError

M = TypeVar("M", bound=BaseModel)


def parsed_json(raw: bytes) -> Any:
    """The JSON value of a body; 400 when it is not JSON (or nests past the parser's depth)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise RestError(400, 400, "Unexpected character: the JSON nests too deeply") from None
    except ValueError as exc:  # JSONDecodeError, invalid UTF-8, an integer of too many digits
        raise RestError(400, 400, f"Unexpected character: {exc}") from None


def validated(model: type[M], value: Any) -> M:
    """The value as the model; 422 naming the first field at fault, as the app's handler does."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise RestError(422, 422, f"{where}: {first['msg']}".lstrip(": ")) from None


def media_type(request: Request) -> str:
    """The request's Content-Type without its parameters, lower case ("" when it has none)."""
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def unsupported_media_type() -> RestError:
    return RestError(415, 415, "HTTP 415 Unsupported Media Type")

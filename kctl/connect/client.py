"""A client of a connect worker's REST API (Kafka Connect's): the worker's URL found as
kctl finds its services, and Connect's error bodies turned into kctl's one-line errors and
exit codes."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kctl.cluster import localservice
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

CONNECT = localservice.CONNECT
TIMEOUT_S = 30.0
EXIT_CODES = {400: ExitCode.INVALID_INPUT, 404: ExitCode.NOT_FOUND, 409: ExitCode.CONFLICT}


def worker_url(option: str | None, cluster_dir: Path, env: Mapping[str, str] = os.environ) -> str:
    """`--url`, else $KCTL_CONNECT_URL, else the local cluster's running worker."""
    if option or env.get(CONNECT.url_env):
        return str(option or env[CONNECT.url_env]).rstrip("/")
    local = localservice.running(cluster_dir, CONNECT)
    if local is None:
        raise KctlError(
            f"no connect worker: pass --url URL, set {CONNECT.url_env}, or start one with `kctl connect up`",
            ExitCode.UNREACHABLE,
        )
    return local.url


class ConnectClient:
    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def call(self, method: str, path: str, body: object = None) -> Any:
        """The answer's JSON (None when it has no body); a KctlError for an error answer."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            raise _refusal(error) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise KctlError(
                f"cannot reach the connect worker at {self.url}: {reason}", ExitCode.UNREACHABLE
            ) from None
        return json.loads(text) if text else None


def connector_path(name: str, *rest: str) -> str:
    return "/".join(["/connectors", urllib.parse.quote(name, safe=""), *rest])


def _refusal(error: urllib.error.HTTPError) -> KctlError:
    """Connect's `{"error_code", "message"}` as one line and an exit code."""
    try:
        message = str(json.loads(error.read())["message"])
    except (ValueError, KeyError, TypeError):
        message = f"HTTP {error.code} {error.reason}"
    return KctlError(" ".join(message.split()), EXIT_CODES.get(error.code, ExitCode.ERROR))

"""An HTTP service process of a test's cluster (`python -m schemaregistry`, `python -m
restproxy`), always stopped, and raw HTTP calls that keep the status and body whatever they are."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.cluster_harness import free_port, wait_until


class ServiceProcess:
    def __init__(self, module: str, bootstrap: str, directory: Path, *extra: str) -> None:
        self.module = module
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = directory / f"{module}-{self.port}.log"
        directory.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", module, "--bootstrap", bootstrap, "--port", str(self.port), *extra]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until(self._answers, 30, f"{module} on port {self.port} to answer")
        except BaseException:
            self.stop()
            raise

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(
                f"{self.module} exited with {self.process.returncode}:\n{self.log.read_text()}"
            )
        try:
            return call(self.url, "GET", "/")[0] == 200
        except OSError:
            return False

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.returncode

    def __enter__(self) -> ServiceProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def call(
    url: str,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """(HTTP status, the decoded JSON body, or the text when it is not JSON)."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def declare_body(url: str, path: str, length: int, content_type: str = "application/json") -> tuple[int, Any]:
    """POST headers announcing a body of `length` bytes, then wait for the answer without
    sending it: what a server that reads a body before refusing it would hang on."""
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.putrequest("POST", path)
        connection.putheader("Content-Type", content_type)
        connection.putheader("Content-Length", str(length))
        connection.endheaders()
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()

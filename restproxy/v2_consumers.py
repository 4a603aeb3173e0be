"""(being written)"""

from __future__ import annotations

from fastapi import FastAPI

from restproxy.context import ProxyContext


def routes(app: FastAPI, context: ProxyContext) -> None:
    return None

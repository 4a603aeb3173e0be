"""A broker's start-up imports what serving needs: TLS client certificates (cryptography), SCRAM
(scramp) and the handlers of rarely used APIs are imported on first use (docs/performance.md)."""

import importlib
import inspect

import pytest

from brokerd.api import ON_FIRST_USE
from tests.import_probe import imported

pytestmark = pytest.mark.unit

DEFERRED = (
    "cryptography",
    "scramp",
    "brokerd.api.acls",
    "brokerd.api.scram_credentials",
    "brokerd.api.share_fetch",
    "brokerd.api.reassignments",
    "brokerd.api.delete_records",
)


def test_importing_the_broker_leaves_rarely_used_code_for_later():
    assert imported("import brokerd.main", DEFERRED) == []


def test_every_deferred_handler_exists():
    for module, name in ON_FIRST_USE.values():
        handler = getattr(importlib.import_module(f"brokerd.api.{module}"), name)
        assert inspect.iscoroutinefunction(handler), f"brokerd.api.{module}.{name}"

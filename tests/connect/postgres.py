"""connect.jdbc.localpostgres's throwaway PostgreSQL server for tests: the test is skipped
where PostgreSQL is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from connect.jdbc import localpostgres


@contextmanager
def postgres_server() -> Iterator[localpostgres.Postgres]:
    try:
        with localpostgres.postgres_server() as server:
            yield server
    except localpostgres.NotInstalled as missing:
        pytest.skip(str(missing))

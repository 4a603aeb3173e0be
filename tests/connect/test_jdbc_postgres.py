"""The JDBC sink and source against a real PostgreSQL server (started for the module)."""

from __future__ import annotations

import pytest
from sqlalchemy import MetaData

from connect.jdbc import urls
from connect.jdbc.localpostgres import postgres_server
from tests.connect import jdbc_cases

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def server():
    with postgres_server() as running:
        yield running


@pytest.fixture
def postgresql(server):
    engine = urls.reachable(urls.sqlalchemy_url(server.jdbc_url))
    yield engine
    metadata = MetaData()
    metadata.reflect(engine)
    metadata.drop_all(engine)


def test_postgresql_sink_upserts_deletes_and_skips_a_replayed_batch(postgresql):
    jdbc_cases.upserts_deletes_and_replays(postgresql)


def test_postgresql_sink_inserts_once(postgresql):
    jdbc_cases.inserts_once_with_kafka_coordinates(postgresql)


def test_postgresql_sink_fails_on_a_record_that_does_not_fit(postgresql):
    jdbc_cases.a_record_that_does_not_fit_fails_naming_it(postgresql)


def test_postgresql_sink_skips_and_reports_tolerated_records_once(postgresql):
    jdbc_cases.tolerated_records_are_reported_once_and_the_rest_written(postgresql)


def test_postgresql_source_reads_the_same_range_again(postgresql):
    jdbc_cases.reads_ranges_again_exactly(postgresql)

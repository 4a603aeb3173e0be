"""The pieces of `kctl sql` that need no JVM: triggers, topic names, errors, output rows."""

import datetime
import json

import pytest
from pyspark.sql import Row

from kctl.shell.errors import KctlError
from kctl.spark.output import plain, print_rows
from kctl.spark.sqlrun import summary
from kctl.spark.views import named_topics, quote
from kctl.sql.sql import parse_trigger

pytestmark = pytest.mark.unit


def test_triggers():
    assert parse_trigger(None) is None
    assert parse_trigger("once") == {"once": True}
    assert parse_trigger("available-now") == {"availableNow": True}
    assert parse_trigger("continuous") == {"processingTime": "1 second"}
    assert parse_trigger("500ms") == {"processingTime": "500 milliseconds"}
    assert parse_trigger("2.5s") == {"processingTime": "2.5 seconds"}
    with pytest.raises(KctlError, match="invalid --trigger 'soon'"):
        parse_trigger("soon")


def test_only_topics_the_query_names_become_views():
    topics = ["orders", "page-views", "users.v2", "ord", "__consumer_offsets", "Big"]
    sql = "SELECT o.user, count(*) FROM orders o JOIN `page-views` p ON o.id = p.id, users.v2, big"
    assert named_topics(sql, topics) == ["Big", "orders", "page-views", "users.v2"]
    assert named_topics("SELECT * FROM __consumer_offsets", topics) == []
    assert quote("a`b-c") == "`a``b-c`"


def test_summary_finds_the_python_error_of_a_worker():
    spark_error = (
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker:\n"
        'Traceback (most recent call last):\n  File "x.py", line 1\n'
        "kctl.spark.planning.DataLossError: t/0 no longer exists\n SQLSTATE: 38000"
    )
    assert summary(Exception(spark_error)) == "t/0 no longer exists"
    assert summary(Exception("[TABLE_OR_VIEW_NOT_FOUND] nope\nmore")) == "[TABLE_OR_VIEW_NOT_FOUND] nope"


def test_rows_print_as_json_lines_csv_or_a_table(capsys):
    when = datetime.datetime(2026, 1, 2, 3, 4, 5)
    rows = [(b"k", when, Row(a=1, b=[1, 2])), (None, None, None)]
    print_rows(["key", "at", "nested"], rows, "json")
    first, second = capsys.readouterr().out.splitlines()
    assert json.loads(first) == {"key": "k", "at": "2026-01-02T03:04:05", "nested": {"a": 1, "b": [1, 2]}}
    assert json.loads(second) == {"key": None, "at": None, "nested": None}
    print_rows(["key", "at"], [(b"k", when)], "csv")
    assert capsys.readouterr().out.splitlines() == ["key,at", "k,2026-01-02T03:04:05"]
    print_rows(["user", "n"], [("ann", 3), ("bob", None)], "text")
    assert capsys.readouterr().out.splitlines() == ["USER  N", "ann   3", "bob   -"]
    assert plain(bytearray(b"\xff")) == "\ufffd"

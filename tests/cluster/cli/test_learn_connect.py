"""`kctl learn run connect` on real brokers, a connect worker and a second cluster: a SQLite
table's update reaches the topic as a new record and the sink's copy follows; a group that
read 6 of 10 orders on one cluster reads exactly the other 4 on the mirror. Nothing the lesson
started (brokers of both clusters, the worker and its Spark) outlives it."""

from __future__ import annotations

import pytest

from tests.cluster.cli.lesson_harness import lesson_processes, run_lesson

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("connect"), pytest.mark.timeout(480)]

LESSON_TIMEOUT_S = 420.0  # the worker's Spark starts with its first connector


def test_a_table_streams_into_a_copy_and_a_group_moves_to_the_mirror(learner, tmp_path):
    notes = tmp_path / "connect.md"
    text = run_lesson("connect", "b,b", learner, notes, LESSON_TIMEOUT_S)
    assert "4 records; key 1 has 2 (Paris, then Lyon); copy.db equals shop.db row by row" in text
    assert "offset 6 on east became 3 on west; read: order 6, order 7, order 8, order 9" in text
    assert text.count("**Check (✔ held):**") == 2 and "did NOT hold" not in text
    assert "Predictions: 2 of 2 right." in text
    assert lesson_processes(tmp_path) == []
    assert list((tmp_path / "tmp").iterdir()) == []

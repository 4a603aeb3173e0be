"""FileStreamSource's byte ranges of whole lines, FileStreamSink's record of where a batch
began, and offsets read from a Spark checkpoint, as plain Python."""

import json

import pytest

from connect import progress
from connect.filesink import FileAppender
from connect.filesource import complete_end, lines
from connect.queryspec import QuerySpec

pytestmark = pytest.mark.unit


def test_ranges_end_after_the_last_complete_line(tmp_path):
    path = tmp_path / "in.txt"
    assert complete_end(str(path), 0) == 0  # no file yet: nothing to read
    path.write_bytes(b"a\r\nb\rc\nhalf")
    end = complete_end(str(path), 0)
    assert end == len(b"a\r\nb\rc\n")
    assert lines(str(path), 0, end) == ["a", "b", "c"]
    assert complete_end(str(path), end) == end  # "half" waits for its terminator
    with open(path, "ab") as handle:
        handle.write(b"way\r")  # a last \r may be half of \r\n: it waits too
    assert complete_end(str(path), end) == end
    with open(path, "ab") as handle:
        handle.write(b"\n")
    assert lines(str(path), end, complete_end(str(path), end)) == ["halfway"]


def test_a_replayed_sink_batch_starts_where_its_first_attempt_did(tmp_path):
    out = tmp_path / "out.txt"
    appender = FileAppender(QuerySpec("out", {"file": str(out)}, {}, {}, tmp_path / "checkpoint"))
    assert appender._start_of(0) == 0
    out.write_text("one\ntwo\n")
    assert appender._start_of(0) == 0  # the same batch again: cut back to where it began
    assert appender._start_of(1) == len("one\ntwo\n")


def test_offsets_come_from_the_last_committed_batch(tmp_path):
    checkpoint = tmp_path / "cp"
    assert progress.source_offsets(checkpoint, "/in") == []
    for batch, end in ((0, {"position": 4}), (1, {"position": 9})):
        (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
        (checkpoint / "offsets" / str(batch)).write_text("v1\n{}\n" + json.dumps(end))
    (checkpoint / "commits").mkdir()
    (checkpoint / "commits" / "0").write_text("v1\n{}")
    assert progress.source_offsets(checkpoint, "/in") == [
        {"partition": {"filename": "/in"}, "offset": {"position": 4}}
    ]
    sink = tmp_path / "sink"
    (sink / "offsets").mkdir(parents=True)
    (sink / "commits").mkdir()
    (sink / "offsets" / "3").write_text('v1\n{}\n{"t": {"1": 5, "0": 7}}')
    (sink / "commits" / "3").write_text("v1\n{}")
    assert progress.sink_offsets(sink) == [
        {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 7}},
        {"partition": {"kafka_topic": "t", "kafka_partition": 1}, "offset": {"kafka_offset": 5}},
    ]
    assert progress.sink_topics(sink) == ["t"]

"""Offsets in Spark's Kafka JSON form."""

import json

import pytest

from kctl.spark.offsets import TopicPartition as TP
from kctl.spark.offsets import from_json, parse, parse_assign, to_json

pytestmark = pytest.mark.unit


def test_json_is_sorted_with_string_partitions_and_round_trips():
    offsets = {TP("b", 10): 7, TP("a", 2): 5, TP("b", 9): 3}
    doc = to_json(offsets)
    assert json.dumps(doc) == '{"a": {"2": 5}, "b": {"9": 3, "10": 7}}'
    assert from_json(json.loads(json.dumps(doc))) == offsets


def test_equal_offsets_serialise_identically_whatever_the_insertion_order():
    one = {TP("t", 0): 1, TP("t", 1): 2}
    other = {TP("t", 1): 2, TP("t", 0): 1}
    assert json.dumps(to_json(one)) == json.dumps(to_json(other))


def test_parse_option_and_errors_name_the_option():
    assert parse('{"t": {"0": 23, "1": -2}}', "startingOffsets") == {TP("t", 0): 23, TP("t", 1): -2}
    for bad in ("latest-ish", '{"t": [0]}', '{"t": {"x": 1}}', "[]"):
        with pytest.raises(ValueError, match="invalid startingOffsets"):
            parse(bad, "startingOffsets")


def test_assign():
    assert parse_assign('{"b": [2, 0], "a": [1]}') == [TP("a", 1), TP("b", 0), TP("b", 2)]
    with pytest.raises(ValueError, match="names no partition"):
        parse_assign('{"a": []}')
    with pytest.raises(ValueError, match="invalid assign"):
        parse_assign('{"a": ["x"]}')

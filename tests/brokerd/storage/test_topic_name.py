import pytest
from kafka.errors import InvalidTopicError

from brokerd.storage.topic_name import parse_partition_dir_name, partition_dir_name, validate_topic_name

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["orders", "a", "my.topic_v2-x", "__consumer_offsets", "x" * 249])
def test_legal_names(name):
    validate_topic_name(name)


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", "a b", "topic\x00", "caf\u00e9", "x" * 250])
def test_illegal_names_cannot_become_directories(name):
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)


def test_partition_directory_names_round_trip():
    assert partition_dir_name("my-topic", 12) == "my-topic-12"
    assert parse_partition_dir_name("my-topic-12") == ("my-topic", 12)


@pytest.mark.parametrize("name", ["orders", "orders-", "orders-01", "orders-0.3f2a-delete", "..-1", "-3"])
def test_other_directory_names_are_not_partitions(name):
    assert parse_partition_dir_name(name) is None

"""The test helper itself must agree with Kafka, or the partitioning test proves nothing."""

import ctypes

import pytest

from tests.kctl.murmur2 import murmur2

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "key, expected",
    [  # Kafka's UtilsTest.testMurmur2
        ("21", -973932308),
        ("foobar", -790332482),
        ("a-little-bit-long-string", -985981536),
        ("a-little-bit-longer-string", -1486304829),
        ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        ("abc", 479470107),
    ],
)
def test_matches_kafka_test_vectors(key, expected):
    assert ctypes.c_int32(murmur2(key.encode())).value == expected

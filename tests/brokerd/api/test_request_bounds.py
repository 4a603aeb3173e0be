"""Every count and size a request carries is bounded before brokerd allocates or loops by it.

Two halves. The codec: a length off the wire (array count, string, bytes, records) is only
believed as far as the frame's own bytes go, and a null where Kafka's schema allows none is a
malformed request, whatever the length claims. The handlers: each integer field of each
frame a real client sent (tests/fuzz/corpus), set to the largest and to the smallest value of
its type, is answered (or refused) by a broker in this process within tests/fuzz/broker.py's
bounds: no internal error, MAX_CPU_S of processor time, MAX_PEAK_BYTES allocated.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.api_key import ApiKey

from brokerd.protocol.api_versions import is_supported
from brokerd.protocol.codec import MESSAGES, MalformedRequest, decode_request, peek_header
from tests.fuzz import CORPUS
from tests.fuzz.broker import InProcessBroker

pytestmark = pytest.mark.unit

INT32_MAX = 2**31 - 1
VARINT_MAX = b"\xff\xff\xff\xff\x0f"  # an unsigned varint of 2**32-1
CLIENT = struct.pack(">h", 3) + b"fuz"


def _header(api_key: int, version: int, flexible: bool = False) -> bytes:
    return struct.pack(">hhi", api_key, version, 1) + CLIENT + (b"\x00" if flexible else b"")


# Frames whose lengths claim far more than they carry (and nulls where none is allowed).
LYING_FRAMES = {
    "array of 2**31-1 topics": _header(ApiKey.CreatePartitions, 1) + struct.pack(">i", INT32_MAX),
    "compact array of 2**32-2 topics": _header(ApiKey.CreateTopics, 5, True) + VARINT_MAX,
    "topic name of 32767 bytes": _header(ApiKey.CreatePartitions, 1) + struct.pack(">ih", 1, 32767) + b"fz1",
    "compact topic name of 2**32-2 bytes": _header(ApiKey.CreateTopics, 5, True) + b"\x02" + VARINT_MAX,
    "records of 2**31-1 bytes": _header(ApiKey.Produce, 3)
    + struct.pack(">hhii", -1, 1, 1000, 1)
    + struct.pack(">h", 3)
    + b"fz1"
    + struct.pack(">iii", 1, 0, INT32_MAX)
    + b"\x00" * 61,
    "null topics array": _header(ApiKey.CreatePartitions, 1) + struct.pack(">iib", -1, 1000, 0),
    "null group id in an array": _header(ApiKey.ConsumerGroupDescribe, 0, True) + b"\x02\x00\x00\x00",
}


@pytest.mark.parametrize("name", list(LYING_FRAMES))
def test_a_length_past_the_frame_is_malformed_at_once(name):
    # once untimed: an API's request schema is built on its first use, whatever the frame says
    with pytest.raises(MalformedRequest):
        decode_request(LYING_FRAMES[name])
    tracemalloc.start()
    try:
        started = time.monotonic()
        with pytest.raises(MalformedRequest):
            decode_request(LYING_FRAMES[name])
        elapsed, peak = time.monotonic() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 0.1
    assert peak < 1024 * 1024


def test_a_null_kafka_allows_still_decodes():
    """CreatePartitions' assignments are nullable: null means "place them for me"."""
    frame = _header(ApiKey.CreatePartitions, 1) + struct.pack(">ih", 1, 3) + b"fz1"
    frame += struct.pack(">iiib", 5, -1, 1000, 0)
    assert decode_request(frame).body.topics[0].assignments is None


_EXTREMES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), INT32_MAX),
    "int64": (-(2**63), 2**63 - 1),
}
Path_ = tuple[Any, ...]


def _integer_fields(
    container: Any, struct: Any, version: int, path: Path_ = ()
) -> Iterator[tuple[Path_, str]]:
    """Where each integer field of a decoded request is (attribute names and list indexes)."""
    for field in struct.untagged_fields(version):
        value = getattr(container, field.name, None)
        if field.type_str in _EXTREMES:
            yield (*path, field.name), field.type_str
        elif field.is_struct_array() and value is not None:
            for i, item in enumerate(value):
                yield from _integer_fields(item, field, version, (*path, field.name, i))
        elif field.is_struct() and value is not None:
            yield from _integer_fields(value, field, version, (*path, field.name))


def _with(frame: bytes, path: Path_, value: int) -> bytes:
    """``frame`` re-encoded with the field at ``path`` set to ``value``."""
    body = decode_request(frame).body
    container: Any = body
    for step in path[:-1]:
        container = container[step] if isinstance(step, int) else getattr(container, step)
    setattr(container, path[-1], value)
    return bytes(body.encode(header=True))


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = InProcessBroker(tmp_path_factory.mktemp("bounds"), max_wait_s=0.02)
    tracemalloc.start()
    yield broker
    tracemalloc.stop()
    broker.close()


def _decodable(corpus: Path) -> list[str]:
    """The recorded frames brokerd decodes (a client's first ApiVersions may be of a version
    it only answers with UNSUPPORTED_VERSION)."""
    headers = {path.name: peek_header(path.read_bytes()) for path in corpus.glob("*.bin")}
    return sorted(name for name, h in headers.items() if is_supported(h.api_key, h.api_version))


@pytest.mark.parametrize("recorded", _decodable(CORPUS))
def test_every_integer_field_at_its_extremes_is_answered_within_bounds(broker, recorded):
    for created in CORPUS.glob("*-CreateTopics-*.bin"):  # the topics the clients' frames name
        broker.answer(created.read_bytes())
    frame = (CORPUS / recorded).read_bytes()
    header, body = decode_request(frame)
    struct_ = MESSAGES[header.api_key][0]._struct
    for path, type_str in _integer_fields(body, struct_, header.api_version):
        for extreme in _EXTREMES[type_str]:
            broker.answer(_with(frame, path, extreme))  # raises FrameFailure, naming the frame

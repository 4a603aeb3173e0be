"""Partition offsets and their JSON form, which is Spark's Kafka connector's.

`{"orders": {"0": 23, "1": -1}}` is what users write in `startingOffsets`, what Spark stores
in `<checkpoint>/offsets/<batch>` for this source, and what the engine hands back to it, so
one encoder and one decoder serve all three. Keys are strings (JSON objects have no integer
keys, and PySpark returns them as strings anyway) and always sorted: Spark compares offsets
as JSON text, so equal offsets must serialise identically.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import NamedTuple

EARLIEST = -2
LATEST = -1


class TopicPartition(NamedTuple):
    topic: str
    partition: int


Offsets = dict[TopicPartition, int]


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The nested dict PySpark serialises into the checkpoint, in a deterministic order."""
    doc: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        doc.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return doc


def from_json(doc: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {
        TopicPartition(topic, int(p)): int(offset)
        for topic, partitions in doc.items()
        for p, offset in partitions.items()
    }


def parse(text: str, option: str) -> Offsets:
    """A JSON offsets (or timestamps) option; ValueError naming the option when malformed."""
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
            raise ValueError("expected an object of objects")
        parsed = from_json(doc)
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f'invalid {option} {text!r}: expected JSON like {{"topic": {{"0": 23, "1": -2}}}} ({exc})'
        ) from None
    return parsed


def parse_assign(text: str) -> list[TopicPartition]:
    """The `assign` option: `{"topicA": [0, 1], "topicB": [2]}`."""
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise ValueError("expected an object")
        parsed = sorted({TopicPartition(t, int(p)) for t, ps in doc.items() for p in ps})
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f'invalid assign {text!r}: expected JSON like {{"topicA": [0, 1]}} ({exc})'
        ) from None
    if not parsed:
        raise ValueError("assign names no partition")
    return parsed

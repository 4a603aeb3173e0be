"""Kafka's Java default partitioner for keyed records, to check where kctl's keys land."""

from __future__ import annotations

SEED = 0x9747B28C
M = 0x5BD1E995
MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """org.apache.kafka.common.utils.Utils.murmur2, as an unsigned 32-bit value."""
    length = len(data)
    h = (SEED ^ length) & MASK
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * M) & MASK
        k ^= k >> 24
        k = (k * M) & MASK
        h = ((h * M) & MASK) ^ k
    tail = data[length - length % 4 :]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * M) & MASK
    h ^= h >> 13
    h = (h * M) & MASK
    h ^= h >> 15
    return h


def java_partition(key: bytes, partitions: int) -> int:
    """Utils.toPositive(Utils.murmur2(key)) % numPartitions."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions

"""The names `compression.type` takes and the codec id each has in a batch's attributes.

Kept apart from the recompression code so that the config table (log_config), which kctl reads
for every command that shows topics, does not import kafka-python's record code with it.
"""

from __future__ import annotations

PRODUCER = "producer"
CODEC_IDS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def codec_available(name: str) -> bool:
    """Whether this broker can write ``name`` (kafka-python needs the codec's Python module)."""
    from kafka import codec

    available: dict[str, bool] = {
        "uncompressed": True,
        "gzip": codec.has_gzip(),
        "snappy": codec.has_snappy(),
        "lz4": codec.has_lz4(),
        "zstd": codec.has_zstd(),
    }
    return available[name]

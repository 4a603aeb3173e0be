"""Topic names and the partition directory names built from them.

A topic name becomes a directory name under the data dir, so Kafka's naming
rules are also what keeps a hostile name such as ``../x`` from escaping it.
"""

from __future__ import annotations

import re

from kafka.errors import InvalidTopicError

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicError unless ``name`` follows Kafka's topic naming rules."""
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters,"
            f" topic name: {name[:40]}..."
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f"Topic name {name!r} is illegal, it contains a character other than"
            " ASCII alphanumerics, '.', '_' and '-'"
        )


def partition_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>``, Kafka's partition directory name."""
    validate_topic_name(topic)
    if partition < 0:
        raise ValueError(f"partition must be >= 0, got {partition}")
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` for a partition directory name, None for anything else.

    Directories being deleted (``<topic>-<p>.<id>-delete``) and stray files
    come back as None, so the broker can skip them while scanning its data dir.
    """
    topic, dash, partition = name.rpartition("-")
    if not (dash and partition.isascii() and partition.isdigit()):
        return None
    if str(int(partition)) != partition:
        return None
    try:
        validate_topic_name(topic)
    except InvalidTopicError:
        return None
    return topic, int(partition)

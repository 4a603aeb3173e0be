"""The lessons, in the order the course teaches them, and how a learner names one."""

from __future__ import annotations

from kctl.learn.lesson import Lesson
from kctl.learn.lessons import (
    acks,
    acls,
    connect,
    controller,
    failover,
    groups,
    highwatermark,
    idempotence,
    isr,
    offsets,
    partition,
    partitions,
    retention,
    schemas,
    transactions,
)
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

LESSONS: tuple[Lesson, ...] = (
    partitions.LESSON,
    offsets.LESSON,
    isr.LESSON,
    highwatermark.LESSON,
    acks.LESSON,
    failover.LESSON,
    partition.LESSON,
    controller.LESSON,
    idempotence.LESSON,
    transactions.LESSON,
    groups.LESSON,
    retention.LESSON,
    acls.LESSON,
    schemas.LESSON,
    connect.LESSON,
)


def numbered() -> list[tuple[int, Lesson]]:
    return list(enumerate(LESSONS, 1))


def find(name: str) -> Lesson:
    """A lesson by name or number; an unknown one is exit 4, naming the lessons there are."""
    for number, lesson in numbered():
        if name in (lesson.name, str(number)):
            return lesson
    names = ", ".join(lesson.name for lesson in LESSONS)
    raise KctlError(f"no lesson {name!r}; the lessons are: {names}", ExitCode.NOT_FOUND)

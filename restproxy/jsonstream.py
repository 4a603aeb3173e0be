"""Concatenated JSON objects read from a request body as it arrives: v3's streaming produce
sends records as `{...}{...}` (any whitespace between) in one chunked body, and each record
is answered as soon as it is delivered, so the body cannot be read whole first.

The splitter finds where each top-level object ends by counting braces outside strings, in
one pass over each byte (the bytes of a multi-byte UTF-8 character are never ASCII, so
scanning bytes is safe); parsing the object is left to json.loads. An object may be at most
`max_object_bytes` long, so a body that never closes its brace cannot grow the buffer.
"""

from __future__ import annotations

import re

# Runs of what does not change the depth, each consumed by one regex call: outside strings,
# anything but braces and quotes, and whole strings; inside a string cut by the chunk's end,
# anything but its closing quote (an escaped character as a pair, so `\"` does not close it).
_OUTSIDE_STRING = re.compile(rb'(?:[^{}"]++|"(?:[^"\\]++|\\.)*+")*+', re.DOTALL)
_INSIDE_STRING = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
_SPACE = re.compile(rb"[ \t\r\n]*")


class NotAnObject(ValueError):
    """The stream holds something other than an object at its top level."""


class ObjectTooLarge(ValueError):
    pass


class ObjectSplitter:
    def __init__(self, max_object_bytes: int) -> None:
        self.max_object_bytes = max_object_bytes
        self._buffer = bytearray()
        self._position = 0  # where scanning resumes
        self._start = 0  # where the object being scanned starts
        self._depth = 0
        self._in_string = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """The objects `chunk` completes, in order."""
        self._buffer += chunk
        found: list[bytes] = []
        while self._step(found):
            pass
        self._drop_consumed()
        if self._depth > 0 and len(self._buffer) > self.max_object_bytes:
            raise ObjectTooLarge(f"an object of more than {self.max_object_bytes} bytes")
        return found

    def finish(self) -> None:
        """The body ended: what is left must be whitespace."""
        if self._depth > 0 or _after_space(self._buffer, self._position) != len(self._buffer):
            raise NotAnObject("the body ends inside an object")

    def _step(self, found: list[bytes]) -> bool:
        """Scan to the next brace or quote that matters; False when the buffer is used up."""
        buffer = self._buffer
        if self._depth == 0:
            self._position = _after_space(buffer, self._position)
            if self._position == len(buffer):
                return False
            if buffer[self._position] != ord("{"):
                raise NotAnObject(
                    f"expected '{{' at the start of a record, found {chr(buffer[self._position])!r}"
                )
            self._start, self._depth = self._position, 1
            self._position += 1
            return True
        if self._in_string:
            return self._in_string_step()
        self._position = _OUTSIDE_STRING.match(buffer, self._position).end()  # type: ignore[union-attr]
        if self._position == len(buffer):
            return False
        token = buffer[self._position]
        self._position += 1
        if token == ord('"'):  # a string the buffer ends inside
            self._in_string = True
        elif token == ord("{"):
            self._depth += 1
        else:
            self._depth -= 1
            if self._depth == 0:
                found.append(bytes(buffer[self._start : self._position]))
        return True

    def _in_string_step(self) -> bool:
        """Past the rest of a string; False while the buffer ends inside it (or after a
        backslash, whose escaped character is still to come)."""
        self._position = _INSIDE_STRING.match(self._buffer, self._position).end()  # type: ignore[union-attr]
        if self._position == len(self._buffer) or self._buffer[self._position] == ord("\\"):
            return False
        self._in_string = False
        self._position += 1
        return True

    def _drop_consumed(self) -> None:
        consumed = self._start if self._depth > 0 else self._position
        del self._buffer[:consumed]
        self._position -= consumed
        self._start = max(0, self._start - consumed)


def _after_space(buffer: bytearray, position: int) -> int:
    space = _SPACE.match(buffer, position)
    return position if space is None else space.end()

"""The one exception type commands raise for expected failures.

Commands never print errors themselves: they raise KctlError, and the top-level group turns
it into a single line on stderr plus the matching exit code, so no user sees a traceback.
"""

from __future__ import annotations

import os
import sys

from kctl.shell.exit_codes import ExitCode


class KctlError(Exception):
    """An expected failure: one line for the user and the exit code scripts see."""

    def __init__(self, message: str, code: ExitCode = ExitCode.ERROR):
        super().__init__(message)
        self.message = message
        self.code = code


def discard_stdout() -> None:
    """Point stdout at /dev/null once its reader went away (a closed pipe), so the
    interpreter's final flush cannot fail again."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
    except (OSError, ValueError):
        pass

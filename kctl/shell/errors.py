"""The one exception type commands raise for expected failures.

Commands never print errors themselves: they raise KctlError, and the top-level group turns
it into a single line on stderr plus the matching exit code, so no user sees a traceback.
"""

from __future__ import annotations

from kctl.shell.exit_codes import ExitCode


class KctlError(Exception):
    """An expected failure: one line for the user and the exit code scripts see."""

    def __init__(self, message: str, code: ExitCode = ExitCode.ERROR):
        super().__init__(message)
        self.message = message
        self.code = code

"""The `kctl` executable (the console script): a help page kctl printed before is printed again
from the help cache without importing the command tree (kctl.shell.helpcache); everything
else runs the command tree (kctl.main)."""

from __future__ import annotations

import os
import sys

from kctl.shell import helpcache
from kctl.shell.exit_codes import ExitCode


def main() -> None:
    args = sys.argv[1:]
    page = helpcache.lookup(args)
    if page is not None:
        _print(page)
        return
    from kctl.main import app

    with helpcache.recording(args):
        app(prog_name="kctl")


def _print(page: bytes) -> None:
    try:
        sys.stdout.buffer.write(page)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second failure at exit
        sys.exit(ExitCode.BROKEN_PIPE)

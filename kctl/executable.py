"""The `kctl` executable (the console script): a help page kctl printed before is printed again
from the help cache without importing the command tree (kctl.shell.helpcache); everything
else runs the command tree (kctl.main)."""

from __future__ import annotations

import sys

from kctl.cluster import launcher_process
from kctl.shell import helpcache
from kctl.shell.errors import discard_stdout
from kctl.shell.exit_codes import ExitCode


def main() -> None:
    launcher_process.start_early(sys.argv[1:])
    page_key = helpcache.page_key(sys.argv[1:])
    page = helpcache.cached_page(page_key)
    if page is not None:
        _print(page)
        return
    from kctl.main import app

    with helpcache.recording(page_key):
        app(prog_name="kctl")


def _print(page: bytes) -> None:
    try:
        sys.stdout.buffer.write(page)
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()
        sys.exit(ExitCode.BROKEN_PIPE)

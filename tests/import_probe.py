"""What a fresh interpreter imports: for the tests that keep start-up free of heavy packages
(docs/performance.md). Each probe runs in a new process, since the test process has imported
everything already."""

import json
import os
import subprocess
import sys

# At exit, prints as its last stderr line the modules among WATCHED that were imported: a
# top-level package counts when any of its modules was.
REPORT_AT_EXIT = (
    "import atexit, json, os, sys\n"
    "def _report():\n"
    "    watched = json.loads(os.environ['WATCHED'])\n"
    "    found = {m.split('.')[0] for m in sys.modules} | set(sys.modules)\n"
    "    print(json.dumps(sorted(found & set(watched))), file=sys.stderr)\n"
    "atexit.register(_report)\n"
)


def imported(code: str, watched: tuple[str, ...], env: dict[str, str] | None = None) -> list[str]:
    """Those of `watched` (top-level packages or full module names) a fresh interpreter has
    imported when `code` ends, however it ends (a CLI exits through SystemExit)."""
    done = subprocess.run(
        [sys.executable, "-c", REPORT_AT_EXIT + code],
        env={**os.environ, **(env or {}), "WATCHED": json.dumps(watched)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return json.loads(done.stderr.splitlines()[-1])

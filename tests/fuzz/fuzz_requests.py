"""The request-side fuzz target: atheris (libFuzzer) mutates request frames, seeded with the
frames real clients send (tests/fuzz/corpus), and each goes through the codec and the
handlers of a broker in this process (tests/fuzz/broker.py says what counts as a failure).

    python -m tests.fuzz.fuzz_requests CLUSTER_DIR [libFuzzer flags] WORK_DIR tests/fuzz/corpus

CLUSTER_DIR (new, empty) holds the broker's state directory; libFuzzer exits the process
without Python's clean-up, so the caller removes it. libFuzzer writes the inputs that reach
new code to WORK_DIR (the first directory) and a failing input to ``-artifact_prefix``; given
files instead of directories it replays them. scripts/fuzz runs it for ten minutes, the quick
tier's tests/fuzz/test_fuzz_quick.py for half a minute. The address space is capped at
ADDRESS_SPACE_BYTES so that an allocation the per-request bound would catch too late fails
as MemoryError instead of taking the machine's memory.
"""

from __future__ import annotations

import resource
import sys
import tracemalloc
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["brokerd"]):
    from tests.fuzz.broker import InProcessBroker

ADDRESS_SPACE_BYTES = 4 * 1024**3


def main(argv: list[str]) -> None:
    """``argv``: this program, the cluster directory, then libFuzzer's arguments."""
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))
    broker = InProcessBroker(Path(argv[1]))
    tracemalloc.start()
    atheris.Setup([argv[0], *argv[2:]], broker.answer)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)

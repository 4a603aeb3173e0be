"""librdkafka's mock cluster in a helper process, for interop tests of kctl's client side.

The mock cluster lives inside the librdkafka client that creates it, so a child process
owns one: it prints the bootstrap address, then keeps the cluster up until its stdin closes.
That is a Kafka implementation kctl did not write, on real loopback sockets.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

START_TIMEOUT_S = 15.0


@contextmanager
def mock_cluster(brokers: int = 3) -> Iterator[str]:
    """Yield the bootstrap address of a fresh mock cluster; stop it on exit, whatever happens."""
    proc = subprocess.Popen(
        [sys.executable, __file__, str(brokers)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield _read_bootstrap(proc)
    finally:
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _read_bootstrap(proc: subprocess.Popen) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if selector.select(timeout=deadline - time.monotonic()):
                line = proc.stdout.readline().decode().strip()
                if not line:
                    raise RuntimeError(f"mock cluster exited with {proc.wait()}")
                return line
    raise RuntimeError(f"mock cluster printed no bootstrap within {START_TIMEOUT_S}s")


def _serve(brokers: int) -> None:
    from confluent_kafka import Producer

    owner = Producer({"test.mock.num.brokers": brokers, "log_level": 0})
    metadata = owner.list_topics(timeout=10)
    print(",".join(f"{b.host}:{b.port}" for b in metadata.brokers.values()), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))

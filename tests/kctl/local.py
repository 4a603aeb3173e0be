"""Helpers for tests that drive a real local cluster through the real kctl CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

from brokerd.state import ClusterState
from kctl.cluster import localservice, packetfilter, snapshot
from tests.cluster_harness import wait_until
from tests.kctl.cli import kctl_command, kctl_env, run_kctl

# `kctl cluster up` without the HTTP services, for tests about brokers alone: the services'
# processes cost CPU the tests do not need, and their internal topics (_schemas, and
# __consumer_offsets for the registry's reader) take replicas of their own.
BROKERS_ONLY = ("--no-schema-registry", "--no-rest-proxy")


def kctl_in(directory, *args, expect=0, **kwargs):
    """Run kctl against the cluster in `directory`; fail the test on another exit code."""
    result = run_kctl(*args, env={"KCTL_HOME": str(directory)}, **kwargs)
    assert result.returncode == expect, result.stderr
    return result


def described_partition(directory, topic: str, index: int = 0) -> dict:
    """A partition as `kctl topic describe --json` shows it (the state its leader published),
    read in this process: a test polling through kctl would pay a process start each time."""
    return snapshot.partitions(ClusterState(directory), topic)[index]


def kctl_json(directory, *args, expect=0):
    return json.loads(kctl_in(directory, *args, "--json", expect=expect).stdout)


class KctlProcess:
    """A long-running kctl (e.g. a group consumer, or a producer fed line by line with
    `write`) whose stdout and stderr lines are collected by reader threads, so a test can
    poll them without blocking."""

    def __init__(self, directory, *args):
        self.proc = subprocess.Popen(
            kctl_command(*args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=kctl_env({"KCTL_HOME": str(directory)}),
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._collect, args=(stream, lines), daemon=True)
            for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _collect(stream, lines: list[str]) -> None:
        for raw in stream:
            lines.append(raw.decode(errors="replace").rstrip("\n"))

    def write(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait_for(self, predicate, what: str, timeout: float = 20):
        def check():
            if self.proc.poll() is not None and not predicate():
                raise AssertionError(f"kctl exited ({self.proc.returncode}) before {what}: {self.err}")
            return predicate()

        return wait_until(check, timeout, what)

    def finish(self, timeout: float = 15) -> int:
        """Wait for the exit and for every line to be collected; returns the exit code."""
        code = self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.finish()


def kill_leftovers(directory: Path) -> None:
    """SIGKILL every broker of `directory` still alive (a paused one too: SIGKILL ends it), and
    its schema registry."""
    if ClusterState(directory).exists():
        for reg in ClusterState(directory).brokers():
            if reg.alive:
                os.kill(reg.pid, signal.SIGKILL)
    for service in localservice.SERVICES:
        found = localservice.running(directory, service)
        if found is not None:
            os.kill(found.pid, signal.SIGKILL)
    packetfilter.remove_if_present(directory)  # a network fault's rules, should down have failed

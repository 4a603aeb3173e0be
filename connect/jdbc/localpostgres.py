"""A throwaway PostgreSQL server for the JDBC connectors' tests and benchmark: `initdb` into a
temporary directory, `postgres` on a free port with its socket in that directory, stopped
(immediately) and removed when the caller is done, also when it failed. PostgreSQL refuses to
run as root, so as root the server runs as the `postgres` user, owning the directory."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "kctl"
# the PostgreSQL source connector reads changes from a logical replication slot
LOGICAL_DECODING = "-c wal_level=logical -c max_replication_slots=10 -c max_wal_senders=10"


def server_bin() -> Path | None:
    """The newest installed PostgreSQL's bin directory (Debian's /usr/lib/postgresql/N/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class NotInstalled(RuntimeError):
    """No PostgreSQL server binaries here (scripts/test installs Debian's package)."""


@dataclass(frozen=True)
class Postgres:
    port: int
    database: str = "postgres"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}?user={SUPERUSER}"


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    binaries = server_bin()
    if binaries is None:
        raise NotInstalled("PostgreSQL is not installed (Debian's postgresql package)")
    home = Path(tempfile.mkdtemp(prefix="kctl-postgres-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(home, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log = home / "data", home / "postgres.log"
    try:
        _run(
            [
                *as_user,
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
            ]
        )
        port = _free_port()
        options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off {LOGICAL_DECODING}"
        _run(
            [
                *as_user,
                str(binaries / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "start",
            ]
        )
        try:
            yield Postgres(port)
        finally:
            stop = [*as_user, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]
            subprocess.run(stop, capture_output=True, timeout=60)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stdout}{done.stderr}")


def _free_port() -> int:
    """A port nothing listens on now (the kernel's pick)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])

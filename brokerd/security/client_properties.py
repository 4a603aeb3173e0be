"""The client settings file of a secured local cluster: `<cluster>/admin.properties`.

librdkafka's `key=value` lines (`kcat -F`, confluent-kafka's config dict), holding the super
user's credentials. kctl writes it when it starts a secured cluster and uses it for commands
against the local cluster; brokers read it to authenticate to each other as that super user.
It holds a password, so it is written readable by its owner only.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_NAME = "admin.properties"


def path(cluster_dir: Path) -> Path:
    return Path(cluster_dir) / FILE_NAME


def read(file: Path) -> dict[str, str]:
    """The settings of a properties file ({} when there is none); `#` lines are comments."""
    try:
        text = Path(file).read_text()
    except FileNotFoundError:
        return {}
    settings = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, sep, value = line.partition("=")
            if sep:
                settings[name.strip()] = value.strip()
    return settings


def write(file: Path, settings: dict[str, str], comment: str) -> None:
    """Write the settings with mode 0600 from the first byte (never briefly world-readable)."""
    lines = [f"# {comment}"] + [f"{name}={value}" for name, value in settings.items()]
    tmp = Path(file).with_name(f".{Path(file).name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, ("\n".join(lines) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, file)

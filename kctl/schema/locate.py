"""Which schema registry a command uses: `--schema-registry URL`, then
`$KCTL_SCHEMA_REGISTRY_URL`, then the local cluster's running registry, as the cluster itself
is found (kctl.kafka.bootstrap)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kctl.cluster import localservice
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

REGISTRY_ENV = localservice.SCHEMA_REGISTRY.url_env


def registry_url(option: str | None, cluster_dir: Path, env: Mapping[str, str] = os.environ) -> str:
    found = known_registry_url(option, cluster_dir, env)
    if found is None:
        raise KctlError(
            f"no schema registry: pass --schema-registry URL, set {REGISTRY_ENV}, or start the local "
            "cluster's with `kctl cluster up`",
            ExitCode.UNREACHABLE,
        )
    return found


def known_registry_url(
    option: str | None, cluster_dir: Path, env: Mapping[str, str] = os.environ, local_cluster: bool = True
) -> str | None:
    """The registry's URL if one is named, or the local cluster's if it is the cluster used
    (`local_cluster`) and runs one; None otherwise (what `kctl consume` goes by: it decodes
    records only when it knows a registry, and never with another cluster's ids)."""
    if option:
        return option.rstrip("/")
    if env.get(REGISTRY_ENV):
        return env[REGISTRY_ENV].rstrip("/")
    if not local_cluster:
        return None
    local = localservice.running(cluster_dir, localservice.SCHEMA_REGISTRY)
    return None if local is None else local.url

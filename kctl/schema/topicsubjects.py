"""The subjects a topic's keys and values are registered under, as Confluent's serializers
name them by default (TopicNameStrategy: TOPIC-key, TOPIC-value), for `kctl topic describe`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kctl.kafka.bootstrap import BOOTSTRAP_ENV, resolve_cluster_dir
from kctl.schema.locate import known_registry_url
from kctl.shell import console


def topic_subjects(
    topic: str, registry: str | None, bootstrap: str | None, cluster_dir: Path | None
) -> dict[str, Any] | None:
    """{"key": latest version or None, "value": ...} when a registry is known, else None. The
    local cluster's registry counts only when the local cluster is the one described."""
    local_cluster = not (bootstrap or os.environ.get(BOOTSTRAP_ENV))
    directory = resolve_cluster_dir(cluster_dir)
    url = known_registry_url(registry, directory, local_cluster=local_cluster)
    if url is None:
        return None
    from kctl.schema.registryclient import registry_client
    from schemaregistry.client import RegistryClientError, RegistryError

    client = registry_client(url, directory, timeout=5)
    found: dict[str, Any] = {}
    for side in ("key", "value"):
        try:
            latest = client.version(f"{topic}-{side}", "latest")
        except RegistryError as exc:
            if exc.status != 404:
                console.warn(f"schema registry {url}: {exc}")
                return None
            found[side] = None
        except RegistryClientError as exc:
            console.warn(str(exc))
            return None
        else:
            found[side] = {
                "subject": latest["subject"],
                "version": latest["version"],
                "id": latest["id"],
                "type": latest.get("schemaType", "AVRO"),
            }
    return found


def rows(subjects: dict[str, Any]) -> list[list[Any]]:
    return [
        [side, s["subject"], s["version"], s["id"], s["type"]]
        for side, s in subjects.items()
        if s is not None
    ]

"""Config changes in the metadata log: an AlterConfigs or IncrementalAlterConfigs that is
validate-only, or changes nothing, appends no metadata record; a real change appends one
ConfigRecord per config it changes."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from brokerd.state import ClusterState

pytestmark = pytest.mark.cluster

SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE


def _records_after(cluster_dir, offset: int) -> list[dict]:
    """The metadata records after ``offset``, read as `kctl cluster metadata` reads them."""
    seen: list[dict] = []
    ClusterState(cluster_dir).follow_metadata(lambda record, image: seen.append(record))()
    return [r for r in seen if r.get("offset", -1) > offset]


def _last_offset(cluster_dir) -> int:
    return ClusterState(cluster_dir).metadata_image().offset


def _incremental(admin, resource_type, name, *entries, validate_only=False) -> None:
    resource = ConfigResource(
        resource_type,
        name,
        incremental_configs=[ConfigEntry(key, value, incremental_operation=op) for key, value, op in entries],
    )
    admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(10)


def _legacy(admin, resource_type, name, configs, validate_only=False) -> None:
    resource = ConfigResource(resource_type, name, set_config=configs)
    admin.alter_configs([resource], validate_only=validate_only)[resource].result(10)


@pytest.fixture
def admin(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("quiet", 1, 1, config={"retention.ms": "60000"})])["quiet"].result(10)
    return admin


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_validate_only_and_no_op_changes_append_no_metadata_record(cluster, admin):
    before = _last_offset(cluster.dir)
    topic, broker = ResourceType.TOPIC, ResourceType.BROKER
    _incremental(admin, topic, "quiet", ("retention.ms", "1000", SET), validate_only=True)
    _incremental(admin, topic, "quiet", ("retention.ms", "60000", SET))
    _incremental(admin, topic, "quiet", ("segment.ms", None, DELETE))
    _legacy(admin, topic, "quiet", {"retention.ms": "1000"}, validate_only=True)
    _legacy(admin, topic, "quiet", {"retention.ms": "60000"})
    _incremental(admin, broker, "1", ("background.threads", "12", SET), validate_only=True)
    _incremental(admin, broker, "1", ("log.retention.ms", None, DELETE))
    _legacy(admin, broker, "1", {"background.threads": "12"}, validate_only=True)
    assert _records_after(cluster.dir, before) == []
    assert ClusterState(cluster.dir).topics()["quiet"].configs == {"retention.ms": "60000"}


def test_a_change_appends_one_config_record_per_config_changed(cluster, admin):
    before = _last_offset(cluster.dir)
    _incremental(
        admin, ResourceType.TOPIC, "quiet", ("retention.ms", "1000", SET), ("segment.ms", None, DELETE)
    )
    records = _records_after(cluster.dir, before)
    assert [(r["type"], r["resource_type"], r["resource_name"], r["name"], r["value"]) for r in records] == [
        ("ConfigRecord", "TOPIC", "quiet", "retention.ms", "1000")
    ]


def test_validate_only_does_not_wait_for_the_write_lock(cluster, admin):
    with ClusterState(cluster.dir).write_lock():  # as a writer that holds it for long
        _incremental(admin, ResourceType.TOPIC, "quiet", ("retention.ms", "1000", SET), validate_only=True)
        _incremental(admin, ResourceType.BROKER, "1", ("background.threads", "12", SET), validate_only=True)

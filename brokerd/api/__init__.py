"""Request handlers, one module per API (or per small family of APIs).

Each handler is ``async def handle(services: BrokerServices, request: Request) -> dict | None``
(``request.Handler``): ``services`` is what it may use of the broker, one member per concern
(brokerd/ports/services.py), ``request`` the decoded request and the session it came in on
(brokerd/api/request.py). It returns the response as a dict of snake_case field names, which
the codec turns into bytes, or None when the client expects no response (acks=0 produce).
build_handlers binds each to the broker's services, so the server calls it with the request
alone.
"""

import importlib
from collections.abc import Awaitable, Callable
from functools import partial

from kafka.protocol.api_key import ApiKey

from brokerd.api import (
    api_versions,
    client_quotas,
    configs,
    consumer_group_heartbeat,
    fetch,
    find_coordinator,
    groups,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    offsets,
    produce,
    producer_id,
    topics,
    transactions,
)
from brokerd.api.request import Handler, Request
from brokerd.fetch_session import FetchManager, FetchSessionCache
from brokerd.ports.services import BrokerServices
from brokerd.quotas import ClientQuotas

# APIs most clusters never see: API key -> (module in brokerd.api, handler), imported by the
# first request for them so that a broker's start-up does not pay for them.
ON_FIRST_USE: dict[int, tuple[str, str]] = {
    ApiKey.ElectLeaders: ("elect_leaders", "handle"),
    ApiKey.AlterPartitionReassignments: ("reassignments", "handle_alter"),
    ApiKey.ListPartitionReassignments: ("reassignments", "handle_list"),
    ApiKey.DescribeLogDirs: ("log_dirs", "handle"),
    ApiKey.ConsumerGroupDescribe: ("consumer_group_describe", "handle"),
    ApiKey.DeleteRecords: ("delete_records", "handle"),
    ApiKey.DescribeProducers: ("describe_producers", "handle"),
    ApiKey.CreateAcls: ("acls", "handle_create"),
    ApiKey.DescribeAcls: ("acls", "handle_describe"),
    ApiKey.DeleteAcls: ("acls", "handle_delete"),
    ApiKey.DescribeUserScramCredentials: ("scram_credentials", "handle_describe"),
    ApiKey.AlterUserScramCredentials: ("scram_credentials", "handle_alter"),
    ApiKey.ShareGroupHeartbeat: ("share_group_heartbeat", "handle"),
    ApiKey.ShareGroupDescribe: ("share_group_describe", "handle"),
    ApiKey.ShareFetch: ("share_fetch", "handle"),
    ApiKey.ShareAcknowledge: ("share_acknowledge", "handle"),
    ApiKey.DescribeShareGroupOffsets: ("share_group_offsets", "handle_describe"),
    ApiKey.AlterShareGroupOffsets: ("share_group_offsets", "handle_alter"),
    ApiKey.DeleteShareGroupOffsets: ("share_group_offsets", "handle_delete"),
}


def on_first_use(module: str, name: str) -> Handler:
    """The handler `name` of brokerd.api.`module`, imported when the first request for it comes."""

    async def handle(services: BrokerServices, request: Request) -> dict | None:
        handler: Handler = getattr(importlib.import_module(f"brokerd.api.{module}"), name)
        return await handler(services, request)

    return handle


def build_handlers(services: BrokerServices) -> dict[int, Callable[[Request], Awaitable[dict | None]]]:
    fetch_manager = FetchManager(
        FetchSessionCache(
            services.config.get("max.incremental.fetch.session.cache.slots"),
            services.config.get("min.incremental.fetch.session.eviction.ms"),
        )
    )
    quotas = ClientQuotas(services.quotas.client_quotas_version, services.quotas.client_quotas)
    topic_metadata = metadata.TopicMetadataCache()
    services.metadata.listeners.append(topic_metadata.forget)
    table: dict[int, Handler] = {
        ApiKey.ApiVersions: api_versions.handle,
        ApiKey.Metadata: partial(metadata.handle, cache=topic_metadata),
        ApiKey.Produce: client_quotas.throttled_produce(produce.handle, quotas),
        ApiKey.Fetch: client_quotas.throttled_fetch(
            partial(fetch.handle, fetch_manager=fetch_manager), quotas
        ),
        ApiKey.ListOffsets: list_offsets.handle,
        ApiKey.CreateTopics: topics.handle_create,
        ApiKey.DeleteTopics: topics.handle_delete,
        ApiKey.CreatePartitions: topics.handle_create_partitions,
        ApiKey.DescribeCluster: metadata.handle_describe_cluster,
        ApiKey.InitProducerId: producer_id.handle,
        ApiKey.FindCoordinator: find_coordinator.handle,
        ApiKey.DescribeConfigs: configs.handle_describe,
        ApiKey.AlterConfigs: configs.handle_alter,
        ApiKey.IncrementalAlterConfigs: configs.handle_incremental_alter,
        ApiKey.OffsetForLeaderEpoch: offset_for_leader_epoch.handle,
        ApiKey.JoinGroup: groups.handle_join,
        ApiKey.SyncGroup: groups.handle_sync,
        ApiKey.Heartbeat: groups.handle_heartbeat,
        ApiKey.LeaveGroup: groups.handle_leave,
        ApiKey.ConsumerGroupHeartbeat: consumer_group_heartbeat.handle,
        ApiKey.ListGroups: groups.handle_list,
        ApiKey.DescribeGroups: groups.handle_describe,
        ApiKey.DeleteGroups: groups.handle_delete,
        ApiKey.OffsetCommit: offsets.handle_commit,
        ApiKey.OffsetFetch: offsets.handle_fetch,
        ApiKey.OffsetDelete: offsets.handle_delete,
        ApiKey.AddPartitionsToTxn: transactions.handle_add_partitions,
        ApiKey.AddOffsetsToTxn: transactions.handle_add_offsets,
        ApiKey.EndTxn: transactions.handle_end_txn,
        ApiKey.TxnOffsetCommit: offsets.handle_txn_commit,
        ApiKey.WriteTxnMarkers: transactions.handle_write_markers,
        ApiKey.DescribeTransactions: transactions.handle_describe,
        ApiKey.ListTransactions: transactions.handle_list,
        ApiKey.DescribeClientQuotas: client_quotas.handle_describe,
        ApiKey.AlterClientQuotas: client_quotas.handle_alter,
    }
    table.update({key: on_first_use(module, name) for key, (module, name) in ON_FIRST_USE.items()})
    return {key: partial(handler, services) for key, handler in table.items()}

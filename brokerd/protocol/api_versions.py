"""The API version ranges brokerd advertises in ApiVersions.

Ranges start low on purpose: librdkafka before 2.11.1 (kcat on Debian bookworm uses 2.0.2)
enables features only when a range *contains* a pinned version — gzip/lz4 need Produce∋0,
record batch v2 needs Produce∋3 and Fetch∋4, lz4 and groups need FindCoordinator∋0,
idempotence needs InitProducerId∋0. Maxima stop below an API's first flexible version unless
a later version gives clients something they use (topic ids, KIP-227, KIP-360, ...).
"""

from kafka.protocol.api_key import ApiKey

ADVERTISED: dict[int, tuple[int, int]] = {
    ApiKey.Produce: (0, 8),
    ApiKey.Fetch: (4, 11),  # v7+: incremental fetch sessions (KIP-227)
    ApiKey.ListOffsets: (1, 7),  # v6: flexible, v7: MAX_TIMESTAMP (KIP-734)
    ApiKey.Metadata: (0, 12),  # v10+: topic ids
    ApiKey.FindCoordinator: (0, 2),
    ApiKey.ApiVersions: (0, 3),
    ApiKey.CreateTopics: (0, 4),
    ApiKey.DeleteTopics: (0, 3),
    ApiKey.CreatePartitions: (0, 1),
    ApiKey.ElectLeaders: (0, 1),
    ApiKey.AlterPartitionReassignments: (0, 0),  # flexible from v0
    ApiKey.ListPartitionReassignments: (0, 0),
    ApiKey.DescribeCluster: (0, 1),  # flexible from v0
    ApiKey.DescribeLogDirs: (0, 4),
    ApiKey.InitProducerId: (0, 4),  # flexible from 2; v3: epoch bump (KIP-360)
    ApiKey.DescribeConfigs: (0, 2),
    ApiKey.AlterConfigs: (0, 1),
    ApiKey.IncrementalAlterConfigs: (0, 0),
    ApiKey.OffsetForLeaderEpoch: (0, 3),
    ApiKey.JoinGroup: (0, 5),
    ApiKey.SyncGroup: (0, 3),
    ApiKey.Heartbeat: (0, 3),
    ApiKey.LeaveGroup: (0, 3),  # v3: members by group instance id (KIP-345); flexible from 4
    ApiKey.OffsetCommit: (2, 9),  # v9: member epoch of a KIP-848 consumer group member
    ApiKey.OffsetFetch: (1, 9),  # v7: require_stable (KIP-447); v8: groups; v9: member epoch
    ApiKey.ListGroups: (0, 5),  # v4: state filter, v5: type filter
    ApiKey.DescribeGroups: (0, 4),
    ApiKey.DeleteGroups: (0, 1),
    ApiKey.OffsetDelete: (0, 0),
    ApiKey.AddPartitionsToTxn: (0, 2),  # flexible from 3
    ApiKey.AddOffsetsToTxn: (0, 2),
    ApiKey.EndTxn: (0, 2),
    ApiKey.TxnOffsetCommit: (0, 2),
    ApiKey.WriteTxnMarkers: (0, 0),  # broker to broker; flexible from 1
    ApiKey.DescribeTransactions: (0, 0),  # flexible from v0
    ApiKey.ListTransactions: (0, 1),  # flexible from v0; v1: duration filter
    ApiKey.DeleteRecords: (0, 1),  # flexible from 2
    ApiKey.DescribeProducers: (0, 0),  # flexible from v0
    ApiKey.CreateAcls: (0, 3),  # SECURITY_DISABLED without an authorizer; flexible from 2
    ApiKey.DescribeAcls: (0, 3),
    ApiKey.DeleteAcls: (0, 3),
    # v0 is advertised only because librdkafka before 2.x.y needs the range to contain it to
    # use SASL at all; it then sends v1. A v0 client's unframed tokens are refused (KIP-896).
    ApiKey.SaslHandshake: (0, 1),
    ApiKey.SaslAuthenticate: (0, 2),  # v1: session lifetime (KIP-368); flexible from 2
    ApiKey.DescribeUserScramCredentials: (0, 0),  # KIP-554; flexible from v0
    ApiKey.AlterUserScramCredentials: (0, 0),
    ApiKey.DescribeClientQuotas: (0, 1),  # KIP-546; flexible from 1
    ApiKey.AlterClientQuotas: (0, 1),
    ApiKey.ConsumerGroupHeartbeat: (0, 1),  # KIP-848; v1: regex, client-made member ids
    ApiKey.ConsumerGroupDescribe: (0, 1),  # v1: member type (KIP-1099)
    # KIP-932 share groups: v1 is the first stable version (v0 was Kafka 4.0's early access)
    ApiKey.ShareGroupHeartbeat: (1, 1),
    ApiKey.ShareGroupDescribe: (1, 1),
    ApiKey.ShareFetch: (1, 1),
    ApiKey.ShareAcknowledge: (1, 1),
    ApiKey.DescribeShareGroupOffsets: (0, 0),  # at the group coordinator; flexible from v0
    ApiKey.AlterShareGroupOffsets: (0, 0),
    ApiKey.DeleteShareGroupOffsets: (0, 0),
}

# Produce v0–2 carry legacy message sets (magic 0/1). They are advertised only so old
# librdkafka enables compression; a request at those versions is refused, as Kafka 4 does.
MIN_ACCEPTED_PRODUCE_VERSION = 3


def is_supported(api_key: int, api_version: int) -> bool:
    low, high = ADVERTISED.get(api_key, (1, 0))
    return low <= api_version <= high

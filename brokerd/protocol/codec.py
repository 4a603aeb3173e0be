"""The one module that turns wire bytes into requests and responses into wire bytes.

kafka-python 3.0's ``kafka.protocol`` classes, generated from Kafka's own JSON message
schemas, do the field-level work; this module adds what a server needs on top: choosing the
request class from the header's api key, building nested responses from plain dicts, and
the ApiVersions special cases (v0 response header, v0-format UNSUPPORTED_VERSION reply).
Record batches pass through as opaque bytes in both directions.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    CreateAclsRequest,
    CreateAclsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.admin.client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from kafka.protocol.admin.users import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kafka.protocol.api_key import ApiKey
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.protocol.data_container import DataContainer
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from brokerd.protocol.api_versions import ADVERTISED, is_supported

UNSUPPORTED_VERSION = 35

# Kafka 4 group APIs kafka-python 3.0 has no schemas for: their JSON lives in
# brokerd.protocol.schemas, and kafka-python's loader reads it from there when the class is
# made (as a class statement with ``load_json=`` would, which the type checker cannot follow).
_SCHEMAS = "brokerd.protocol.schemas"


def _message(name: str, **attrs: Any) -> type[ApiMessage]:
    """The ApiMessage class generated from brokerd.protocol.schemas' ``<name>.json``."""
    return cast(
        "type[ApiMessage]",
        type(ApiMessage)(name, (ApiMessage,), {"__module__": __name__, **attrs}, load_json=_SCHEMAS),
    )


def _authorized_operations_as_set(cls: type, json: dict[str, Any]) -> dict[str, Any]:
    """A group's AuthorizedOperations is given as a set of operation codes (as for
    DescribeGroups), packed into Kafka's 32-bit field."""
    groups = next(f for f in json["fields"] if f["name"] == "Groups")
    operations = next(f for f in groups["fields"] if f["name"] == "AuthorizedOperations")
    operations["type"] = "bitfield"
    return json


# KIP-848 consumer groups
ConsumerGroupHeartbeatRequest = _message("ConsumerGroupHeartbeatRequest")
ConsumerGroupHeartbeatResponse = _message("ConsumerGroupHeartbeatResponse")
ConsumerGroupDescribeRequest = _message("ConsumerGroupDescribeRequest")
ConsumerGroupDescribeResponse = _message(
    "ConsumerGroupDescribeResponse", json_patch=classmethod(_authorized_operations_as_set)
)
# KIP-932 share groups
ShareGroupHeartbeatRequest = _message("ShareGroupHeartbeatRequest")
ShareGroupHeartbeatResponse = _message("ShareGroupHeartbeatResponse")
ShareGroupDescribeRequest = _message("ShareGroupDescribeRequest")
ShareGroupDescribeResponse = _message("ShareGroupDescribeResponse")
ShareFetchRequest = _message("ShareFetchRequest")
ShareFetchResponse = _message("ShareFetchResponse")
ShareAcknowledgeRequest = _message("ShareAcknowledgeRequest")
ShareAcknowledgeResponse = _message("ShareAcknowledgeResponse")
DescribeShareGroupOffsetsRequest = _message("DescribeShareGroupOffsetsRequest")
DescribeShareGroupOffsetsResponse = _message("DescribeShareGroupOffsetsResponse")
AlterShareGroupOffsetsRequest = _message("AlterShareGroupOffsetsRequest")
AlterShareGroupOffsetsResponse = _message("AlterShareGroupOffsetsResponse")
DeleteShareGroupOffsetsRequest = _message("DeleteShareGroupOffsetsRequest")
DeleteShareGroupOffsetsResponse = _message("DeleteShareGroupOffsetsResponse")

MESSAGES: dict[int, tuple[type[ApiMessage], type[ApiMessage]]] = {
    ApiKey.Produce: (ProduceRequest, ProduceResponse),
    ApiKey.Fetch: (FetchRequest, FetchResponse),
    ApiKey.ListOffsets: (ListOffsetsRequest, ListOffsetsResponse),
    ApiKey.Metadata: (MetadataRequest, MetadataResponse),
    ApiKey.FindCoordinator: (FindCoordinatorRequest, FindCoordinatorResponse),
    ApiKey.ApiVersions: (ApiVersionsRequest, ApiVersionsResponse),
    ApiKey.CreateTopics: (CreateTopicsRequest, CreateTopicsResponse),
    ApiKey.DeleteTopics: (DeleteTopicsRequest, DeleteTopicsResponse),
    ApiKey.CreatePartitions: (CreatePartitionsRequest, CreatePartitionsResponse),
    ApiKey.ElectLeaders: (ElectLeadersRequest, ElectLeadersResponse),
    ApiKey.AlterPartitionReassignments: (
        AlterPartitionReassignmentsRequest,
        AlterPartitionReassignmentsResponse,
    ),
    ApiKey.ListPartitionReassignments: (
        ListPartitionReassignmentsRequest,
        ListPartitionReassignmentsResponse,
    ),
    ApiKey.DescribeCluster: (DescribeClusterRequest, DescribeClusterResponse),
    ApiKey.DescribeLogDirs: (DescribeLogDirsRequest, DescribeLogDirsResponse),
    ApiKey.InitProducerId: (InitProducerIdRequest, InitProducerIdResponse),
    ApiKey.DescribeConfigs: (DescribeConfigsRequest, DescribeConfigsResponse),
    ApiKey.AlterConfigs: (AlterConfigsRequest, AlterConfigsResponse),
    ApiKey.IncrementalAlterConfigs: (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse),
    ApiKey.OffsetForLeaderEpoch: (OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    ApiKey.JoinGroup: (JoinGroupRequest, JoinGroupResponse),
    ApiKey.SyncGroup: (SyncGroupRequest, SyncGroupResponse),
    ApiKey.Heartbeat: (HeartbeatRequest, HeartbeatResponse),
    ApiKey.LeaveGroup: (LeaveGroupRequest, LeaveGroupResponse),
    ApiKey.OffsetCommit: (OffsetCommitRequest, OffsetCommitResponse),
    ApiKey.OffsetFetch: (OffsetFetchRequest, OffsetFetchResponse),
    ApiKey.ListGroups: (ListGroupsRequest, ListGroupsResponse),
    ApiKey.DescribeGroups: (DescribeGroupsRequest, DescribeGroupsResponse),
    ApiKey.DeleteGroups: (DeleteGroupsRequest, DeleteGroupsResponse),
    ApiKey.OffsetDelete: (OffsetDeleteRequest, OffsetDeleteResponse),
    ApiKey.AddPartitionsToTxn: (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    ApiKey.AddOffsetsToTxn: (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    ApiKey.EndTxn: (EndTxnRequest, EndTxnResponse),
    ApiKey.TxnOffsetCommit: (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    ApiKey.WriteTxnMarkers: (WriteTxnMarkersRequest, WriteTxnMarkersResponse),
    ApiKey.DescribeTransactions: (DescribeTransactionsRequest, DescribeTransactionsResponse),
    ApiKey.ListTransactions: (ListTransactionsRequest, ListTransactionsResponse),
    ApiKey.DeleteRecords: (DeleteRecordsRequest, DeleteRecordsResponse),
    ApiKey.DescribeProducers: (DescribeProducersRequest, DescribeProducersResponse),
    ApiKey.CreateAcls: (CreateAclsRequest, CreateAclsResponse),
    ApiKey.DescribeAcls: (DescribeAclsRequest, DescribeAclsResponse),
    ApiKey.DeleteAcls: (DeleteAclsRequest, DeleteAclsResponse),
    ApiKey.SaslHandshake: (SaslHandshakeRequest, SaslHandshakeResponse),
    ApiKey.SaslAuthenticate: (SaslAuthenticateRequest, SaslAuthenticateResponse),
    ApiKey.DescribeUserScramCredentials: (
        DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse,
    ),
    ApiKey.AlterUserScramCredentials: (AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse),
    ApiKey.DescribeClientQuotas: (DescribeClientQuotasRequest, DescribeClientQuotasResponse),
    ApiKey.AlterClientQuotas: (AlterClientQuotasRequest, AlterClientQuotasResponse),
    ApiKey.ConsumerGroupHeartbeat: (ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
    ApiKey.ConsumerGroupDescribe: (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
    ApiKey.ShareGroupHeartbeat: (ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse),
    ApiKey.ShareGroupDescribe: (ShareGroupDescribeRequest, ShareGroupDescribeResponse),
    ApiKey.ShareFetch: (ShareFetchRequest, ShareFetchResponse),
    ApiKey.ShareAcknowledge: (ShareAcknowledgeRequest, ShareAcknowledgeResponse),
    ApiKey.DescribeShareGroupOffsets: (
        DescribeShareGroupOffsetsRequest,
        DescribeShareGroupOffsetsResponse,
    ),
    ApiKey.AlterShareGroupOffsets: (AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse),
    ApiKey.DeleteShareGroupOffsets: (DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse),
}

_HEADER_PREFIX = struct.Struct(">hhi")


class MalformedRequest(Exception):
    """The bytes are not a request we can answer: the connection gets closed."""


@dataclass
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


class DecodedRequest(NamedTuple):
    header: RequestHeader
    body: ApiMessage


def peek_header(payload: bytes) -> RequestHeader:
    """Read api key, version and correlation id, which sit at fixed offsets in every header."""
    if len(payload) < _HEADER_PREFIX.size:
        raise MalformedRequest(f"request of {len(payload)} bytes is shorter than a header")
    return RequestHeader(*_HEADER_PREFIX.unpack_from(payload))


def decode_request(payload: bytes) -> DecodedRequest:
    """Decode one request frame (without its 4-byte size prefix).

    Raises MalformedRequest for unknown APIs, unadvertised versions (except ApiVersions, whose
    caller answers with a v0 error instead) and bytes that do not parse.
    """
    header = peek_header(payload)
    if header.api_key not in MESSAGES:
        raise MalformedRequest(f"unknown api key {header.api_key}")
    if not is_supported(header.api_key, header.api_version):
        raise MalformedRequest(f"unsupported version {header.api_version} of api {header.api_key}")
    request_class = MESSAGES[header.api_key][0]
    try:
        body, end = _decode_body(request_class, payload, header.api_version)
    except Exception as exc:  # the generated decoders raise many kinds on garbage
        raise MalformedRequest(f"undecodable {request_class.__name__}: {exc!r}") from exc
    if end > len(payload):
        raise MalformedRequest(
            f"a length in {request_class.__name__} runs {end - len(payload)} bytes past the frame"
        )
    _refuse_nulls(body, request_class._struct, header.api_version)
    header.client_id = body.header.client_id
    return DecodedRequest(header, body)


def _decode_body(request_class: type[ApiMessage], payload: bytes, version: int) -> tuple[ApiMessage, int]:
    """ApiMessage.decode with a header, which also tells where the body's last field ended.

    kafka-python's generated decoders slice strings, bytes and records by the length the
    frame claims, and a slice past the end is merely short: without the end position a
    length of 2**31-1 on the last field would pass as the bytes that are there."""
    data = memoryview(payload)
    header_data = io.BytesIO(payload)
    request_header = request_class.parse_header(header_data, version=version)
    decode = request_class._struct.compiled_decode_from(
        version,
        compact=request_class.flexible_version_q(version),
        tagged=request_class.flexible_version_q(version),
        data_class=request_class[None],
    )
    body, end = decode(data, header_data.tell())
    body._header = request_header
    return body, end


# What decodes to None from a length of -1; arrays too.
_NULLABLE_TYPES = frozenset({"string", "bytes", "records"})


def _refuse_nulls(container: DataContainer, struct: Any, version: int) -> None:
    """Kafka's parser refuses a null (length -1) in a field whose schema does not allow one at
    this version, and in an array of strings; kafka-python's decoders accept both, and a
    handler would then fail on the None. So the request is malformed, as Kafka says it."""
    for field in struct.untagged_fields(version):
        value = getattr(container, field.name, None)
        if value is None:
            if (field.is_array() or field.type_str in _NULLABLE_TYPES) and not field.nullable_for_version_q(
                version
            ):
                raise MalformedRequest(f"non-nullable field {field.name} was serialized as null")
        elif field.is_struct_array():
            for item in value:
                _refuse_nulls(item, field, version)
        elif field.is_array() and None in value:  # an array's strings are never nullable
            raise MalformedRequest(f"null element in field {field.name}")
        elif field.is_struct():
            _refuse_nulls(value, field, version)


def encode_response(header: RequestHeader, fields: Mapping[str, Any]) -> bytearray:
    """Encode a response (a nested dict of snake_case field names) as a framed message."""
    response_class = MESSAGES[header.api_key][1]
    response = _build(response_class, fields, header.api_version)
    response.with_header(correlation_id=header.correlation_id)
    return cast(bytearray, response.encode(header=True, framed=True))


def encode_api_versions_unsupported(correlation_id: int) -> bytearray:
    """KIP-511: an unsupported ApiVersions version is answered in v0 format, error 35."""
    low, high = ADVERTISED[ApiKey.ApiVersions]
    fields = {
        "error_code": UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": ApiKey.ApiVersions, "min_version": low, "max_version": high}],
    }
    return encode_response(RequestHeader(ApiKey.ApiVersions, 0, correlation_id), fields)


def encode_request(header: RequestHeader, fields: Mapping[str, Any]) -> bytearray:
    """Encode a request, framed, for brokerd's own broker-to-broker client (replica fetchers,
    transaction markers)."""
    request = _build(MESSAGES[header.api_key][0], fields, header.api_version)
    request.with_header(correlation_id=header.correlation_id, client_id=header.client_id)
    return cast(bytearray, request.encode(header=True, framed=True))


def decode_response(header: RequestHeader, payload: bytes) -> ApiMessage:
    """Decode a response frame (without its size prefix) to the request described by ``header``."""
    response_class = MESSAGES[header.api_key][1]
    try:
        return response_class.decode(payload, version=header.api_version, header=True)
    except Exception as exc:
        raise MalformedRequest(f"undecodable {response_class.__name__}: {exc!r}") from exc


def response_element(api_key: int, array_field: str, fields: Mapping[str, Any]) -> DataContainer:
    """One element of a response's top-level struct array (a Metadata topic, say), built
    from a dict once so that responses can reuse it while it stays true."""
    data_class = MESSAGES[api_key][1]._struct.fields[array_field].data_class
    return _build(data_class, fields)


def _build(
    container_class: type[DataContainer], fields: Mapping[str, Any], version: int | None = None
) -> DataContainer:
    """Build a kafka-python message from a dict, converting nested dicts and lists of dicts
    (an element already built by ``response_element`` is taken as it is)."""
    struct_fields = container_class._struct.fields
    values = {}
    for name, value in fields.items():
        field = struct_fields.get(name)
        if field is None:
            raise KeyError(f"{container_class.__name__} has no field {name!r}")
        if field.is_struct_array() and value is not None:
            value = [
                item if isinstance(item, field.data_class) else _build(field.data_class, item)
                for item in value
            ]
        elif field.is_struct() and value is not None:
            value = _build(field.data_class, value)
        values[name] = value
    if version is None:
        return container_class(**values)
    return container_class(version=version, **values)


def subscribed_topics(member_metadata: bytes) -> set[str] | None:
    """The topics in a consumer group member's subscription (the "consumer" protocol type's
    member metadata); None when it cannot be read."""
    try:
        return set(ConsumerProtocolSubscription.decode(member_metadata).topics)
    except Exception:
        return None

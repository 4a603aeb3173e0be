"""kctl's Kafka clients: outside kctl/spark, the only code that imports confluent-kafka or talks
to a cluster through kafka-python, so commands never build a client or a request themselves.

- which cluster and which client settings: `bootstrap` (-b, $KCTL_BOOTSTRAP, the local
  cluster), `clientprops` (--command-config, a secured local cluster's admin.properties);
- the clients: `client` (AdminClient, Producer, Consumer configured the kctl way, metadata),
  `pyadmin` (kafka-python's admin client, for the requests confluent-kafka lacks);
- Kafka's errors as one line and an exit code: `errors`;
- the requests, one module per resource: `topics`, `configs`, `offsets`, `groups` (with
  `groupapis`, Kafka 4's KIP-848 and share group descriptions), `reassignments`, `acls`,
  `scram`, `quotas`;
- share group members: `share` (confluent-kafka's ShareConsumer, explicit acknowledgement);
- the clients' own machinery: `consumer` (watermarks, assignment, group membership, commits),
  `record` (a consumed record, as typed), `delivery` (delivery reports), `transactions`.

Commands take the types they annotate with (Producer, Consumer, Message, the metadata, Kafka's
error types) from these modules too.
"""

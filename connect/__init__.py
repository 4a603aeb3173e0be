"""A Kafka Connect worker: Kafka Connect's REST API and its connectors, each connector a Spark
Structured Streaming query of one Spark application, reading and writing topics through
kctl's own Spark source and sink (kctl.spark). Connector configs and statuses live in compacted
topics, as Connect keeps them; each connector's progress in a Spark checkpoint."""

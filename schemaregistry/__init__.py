"""A schema registry that speaks Confluent Schema Registry's REST API, kept in a Kafka cluster's
compacted `_schemas` topic; a client of the cluster like any other, so it works against kctl's
brokers and any Kafka-compatible cluster alike. Imports nothing of brokerd or kctl."""

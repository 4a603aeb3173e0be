"""Debezium's PostgreSQL connector: a database's changes, read from a logical replication slot
with the wal2json output plugin through SQL functions, into topics in Debezium's envelope.
`config` holds its settings, `wal2json` decodes the plugin's messages, `columns` maps column
types to Connect's, `envelope` builds the records, `slot` talks to the database and `source`
runs it all as a Spark query."""

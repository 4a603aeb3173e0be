"""Confluent's JDBC connectors (a table into a topic, a topic into a table) on SQLite and
PostgreSQL, through SQLAlchemy Core: `urls` turns Confluent's `connection.url` into an engine,
`types` maps columns to Connect's schemas and back, `querier` reads a table's rows between two
offsets, `writer` writes a batch of records in one transaction, and `source` / `sink` run them
as Spark queries."""

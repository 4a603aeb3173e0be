"""Storage layer of brokerd: partition logs on disk in Apache Kafka's layout.

A partition is a directory of segments (``.log`` + ``.index`` +
``.timeindex`` + ``.txnindex``) holding record batches exactly as they
travel on the wire; see ``partition_log`` for the entry point.

The package imports none of its modules: kctl reads the config table (``log_config``) and
segment files without paying for the whole storage layer (kafka-python's record code among it).
"""

"""What kctl's HTTP services beside a cluster (the schema registry, the REST proxy) share: a
daemon's start (bind first, then a lock file with its pid and URL, then serve), the command
line every one of them takes, the limits on what a request may send, and HTTP basic auth with
the cluster's own users. Imports nothing of brokerd or kctl: the services run against any
Kafka-compatible cluster."""

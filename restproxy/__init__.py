"""Kafka over HTTP: a REST proxy that speaks Confluent's REST Proxy API (v2 and v3) to
applications that cannot speak Kafka's protocol (curl, browsers, serverless functions), and
Kafka's protocol to the cluster, as any client does. Imports nothing of brokerd or kctl."""

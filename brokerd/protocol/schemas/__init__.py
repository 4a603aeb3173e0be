"""JSON message schemas for Kafka 4 group APIs that kafka-python 3.0 does not ship.

The files follow Kafka's message-schema format (the one kafka-python's loader reads), so the
codec generates their classes the same way as for every other API; only the versions clients
actually send are described: KIP-848 consumer groups (68, 69) and KIP-932 share groups
(76-79, 90-92).
"""

"""`kctl group` (group.py) and what only it uses: Kafka's reset strategies as arithmetic
(offsetreset). What the cluster knows about groups comes from kctl.kafka.groups, which
`kctl watch` reads too."""

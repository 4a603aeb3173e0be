"""`kctl consume` (consume.py) and what it uses: which offsets of which partitions it reads
(assignment, which `kctl bench consume` reuses), the record loop (reader), joining a group
and narrating its rebalances (membership), and the output formats (formatting)."""

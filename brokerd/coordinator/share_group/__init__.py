"""The share group coordinator (KIP-932): membership of share groups, their group epoch and
the assignment the broker computes; it runs beside the group coordinator, on the leader of
the group's partition of __consumer_offsets."""

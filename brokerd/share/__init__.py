"""Share groups' side of the partition leader (KIP-932): the in-flight state of each share
partition, share sessions, and the persisted state that survives a leader change."""

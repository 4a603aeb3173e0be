"""The share group protocol (KIP-932): membership of share groups, their group epoch and
the assignment the broker computes, on the leader of the group's partition of
__consumer_offsets; the groups are kept with every other group, in the GroupMetadataManager."""

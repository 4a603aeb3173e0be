"""KIP-848 consumer groups (``group.protocol=consumer``): the broker assigns partitions.

model.py holds a group's and its members' state (epochs, target and current assignments),
assignors.py the server-side assignors, reconciliation.py how a member moves towards its
target (revoke first, assign once the owner let go), subscriptions.py the topics a group
subscribes to (by name or regex), records.py how all of it is stored in
``__consumer_offsets``, heartbeat.py a ConsumerGroupHeartbeat and its checks, and
coordinator.py the state machine that ties them together.
"""

"""The coordinators: consumer groups and their committed offsets in __consumer_offsets, and
transactions in __transaction_state."""

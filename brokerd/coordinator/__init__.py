"""The group coordinator: consumer groups and their committed offsets in __consumer_offsets."""

"""The coordinators: groups of every kind (classic, consumer, share) and their committed
offsets in __consumer_offsets, and transactions in __transaction_state."""

from brokerd.coordinator.offsets_topic import OFFSETS_TOPIC
from brokerd.coordinator.transaction_log import TRANSACTION_STATE_TOPIC

# Written only by their coordinators; clients see them flagged internal in Metadata.
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})

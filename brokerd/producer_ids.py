"""Producer ids for idempotent producers, unique across the cluster and across restarts."""

from brokerd.state import ClusterState

BLOCK_SIZE = 1000


class ProducerIdManager:
    """Hands out ids from a block reserved in the state directory, one lock per thousand ids."""

    def __init__(self, state: ClusterState):
        self.state = state
        self._next = 0
        self._end = 0

    def next_id(self) -> int:
        if self._next >= self._end:
            self._next = self.state.allocate_producer_ids(BLOCK_SIZE)
            self._end = self._next + BLOCK_SIZE
        pid, self._next = self._next, self._next + 1
        return pid

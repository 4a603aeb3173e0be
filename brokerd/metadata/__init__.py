"""The cluster metadata as KRaft keeps it: an append-only log of typed metadata records and
their frames (`records.py`), its segments and snapshots (`log.py`), the immutable image
brokers build by applying the deltas the records make (`image.py`), one partition's
registration (`registration.py`), and the records of a decision (`editor.py`).
brokerd.state opens the log in `state/metadata/` and appends to it under the state
directory's write lock."""

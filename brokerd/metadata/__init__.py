"""The cluster metadata as KRaft keeps it: an append-only log of metadata records and their
frames (`records.py`), its segments and snapshots (`log.py`), the image brokers build by
applying the records and the delta of each catch-up (`image.py`), and the records of a
decision (`editor.py`). brokerd.state opens the log in `state/metadata/` and appends
to it under the state directory's write lock."""

"""The cluster metadata as KRaft keeps it: an append-only log of metadata records
(`log.py`), periodic snapshots, and the image brokers build by applying the records
(`image.py`), one change at a time (`delta.py`)."""

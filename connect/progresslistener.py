"""Spark's progress of every micro-batch of the worker's queries, into connect.metrics: a
StreamingQueryListener hears each batch once (a query's recentProgress keeps only the last
ones, and polling it costs a JVM round trip per batch kept)."""

from __future__ import annotations

from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from connect.metrics import REGISTRY


class ProgressListener(StreamingQueryListener):
    def onQueryStarted(self, event: Any) -> None:
        """Nothing read yet."""

    def onQueryProgress(self, event: Any) -> None:
        REGISTRY.progress(event.progress.name, int(event.progress.numInputRows or 0))

    def onQueryIdle(self, event: Any) -> None:
        """Nothing read."""

    def onQueryTerminated(self, event: Any) -> None:
        """Its failure reaches the connector's status through the runtime."""

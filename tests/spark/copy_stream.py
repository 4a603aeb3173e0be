"""A topic-to-topic streaming query, also runnable in a process of its own so a test can
SIGKILL it:

    python -m tests.spark.copy_stream BOOTSTRAP SOURCE SINK CHECKPOINT MAX_PER_TRIGGER

Runs with Trigger.AvailableNow: it stops once it has copied what the source held at start.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from kctl.spark.session import local_session


def start(
    spark: SparkSession, bootstrap: str, source: str, sink: str, checkpoint: str, per_trigger: str
) -> StreamingQuery:
    return (
        spark.readStream.format("kctl")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", per_trigger)
        .load()
        .select("key", "value")
        .writeStream.format("kctl")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )


if __name__ == "__main__":
    start(local_session("copy-stream", cores="2"), *sys.argv[1:]).awaitTermination()

"""Clicks per user per 10-second window, with a watermark, printed as windows update.

    kctl cluster up
    kctl topic create clicks -p 2
    python examples/windowed_counts.py &      # runs until Ctrl-C; --once: what is there, then exit
    for i in $(seq 30); do echo "user$((i % 3)):/page$i"; done | kctl produce clicks -K :

Windows are by record timestamp (the producer's CreateTime). The 30-second watermark lets
Spark finalise a window, and forget its state, once records 30 s newer than its end arrive;
later records for it are dropped.
"""

from common import parse_args
from pyspark.sql import functions as F

from kctl.spark.session import local_session

args = parse_args(__doc__)

spark = local_session("windowed-counts")
clicks = (
    spark.readStream.format("kctl")
    .option("kafka.bootstrap.servers", args.bootstrap)
    .option("subscribe", "clicks")
    .option("startingOffsets", "earliest")
    .load()
    .select(F.col("key").cast("string").alias("user"), "timestamp")
)

per_window = (
    clicks.withWatermark("timestamp", "30 seconds")
    .groupBy(F.window("timestamp", "10 seconds"), "user")
    .count()
    .select(F.col("window.start").alias("window"), "user", "count")
)

query = (
    per_window.writeStream.format("console")
    .option("truncate", "false")
    .outputMode("update")
    .trigger(**args.trigger)
    .start()
)
query.awaitTermination()

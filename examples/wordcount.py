"""Word count, topic to topic: lines in, running counts per word out.

    kctl cluster up
    kctl topic create lines -p 2
    python examples/wordcount.py &        # runs until Ctrl-C; --once: what is there, then exit
    echo "the quick brown fox jumps over the lazy dog" | kctl produce lines
    kctl consume word-counts -f '%k %s\\n'    # "the 3": every count, after every micro-batch

Brokers: -b HOST:PORT, else $KCTL_BOOTSTRAP, else the local cluster (kctl cluster up).
Python streaming sinks take append or complete output mode, not update: each micro-batch
writes the whole table of counts again, and the latest record of a word is its count.
The query resumes from its checkpoint when restarted, and the sink writes each micro-batch
exactly once.
"""

from common import parse_args
from pyspark.sql import functions as F

from kctl.spark.session import local_session

args = parse_args(__doc__, "wordcount")

spark = local_session("wordcount")
lines = (
    spark.readStream.format("kctl")
    .option("kafka.bootstrap.servers", args.bootstrap)
    .option("subscribe", "lines")
    .option("startingOffsets", "earliest")
    .load()
)

counts = (
    lines.select(F.explode(F.split(F.lower(F.col("value").cast("string")), r"\W+")).alias("word"))
    .where(F.col("word") != "")
    .groupBy("word")
    .count()
)

query = (
    counts.select(F.col("word").alias("key"), F.col("count").cast("string").alias("value"))
    .writeStream.format("kctl")
    .option("kafka.bootstrap.servers", args.bootstrap)
    .option("topic", "word-counts")
    .option("checkpointLocation", args.checkpoint)
    .outputMode("complete")
    .trigger(**args.trigger)
    .start()
)
query.awaitTermination()

"""Orders enriched with a static customer table, topic to topic.

    kctl cluster up
    kctl topic create orders -p 2
    python examples/enrichment_join.py &      # runs until Ctrl-C; --once: what is there, then exit
    printf '%s\\n' '{"customer": "c1", "amount": 30}' '{"customer": "c2", "amount": 12.5}' \\
        | kctl produce orders
    kctl consume orders-enriched -f '%s\\n'  # {"customer":"c1","amount":30.0,"name":"Ada",...}

Each order (a JSON value) is joined with the customers table by id (a left outer join):
orders of unknown customers come out without name and country.
"""

from common import parse_args
from pyspark.sql import functions as F

from kctl.spark.session import local_session

args = parse_args(__doc__, "enrichment-join")

spark = local_session("enrichment-join")
customers = spark.createDataFrame(
    [("c1", "Ada", "UK"), ("c2", "Grace", "US"), ("c3", "Edsger", "NL")],
    "customer STRING, name STRING, country STRING",
)

orders = (
    spark.readStream.format("kctl")
    .option("kafka.bootstrap.servers", args.bootstrap)
    .option("subscribe", "orders")
    .option("startingOffsets", "earliest")
    .load()
    .select(F.from_json(F.col("value").cast("string"), "customer STRING, amount DOUBLE").alias("order"))
    .select("order.*")
)

enriched = orders.join(customers, "customer", "left_outer")

query = (
    enriched.select(F.col("customer").alias("key"), F.to_json(F.struct(*enriched.columns)).alias("value"))
    .writeStream.format("kctl")
    .option("kafka.bootstrap.servers", args.bootstrap)
    .option("topic", "orders-enriched")
    .option("checkpointLocation", args.checkpoint)
    .trigger(**args.trigger)
    .start()
)
query.awaitTermination()

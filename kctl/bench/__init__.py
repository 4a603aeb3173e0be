"""`kctl bench` (bench.py) and the figures it reports (figures, a plain module that the Spark
benchmark, kctl.spark.bench, reports with too)."""

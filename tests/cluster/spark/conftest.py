# The sink's cached producer must not outlive a test's cluster, here as in the Spark tier.
from tests.spark.conftest import drop_cached_producer  # noqa: F401

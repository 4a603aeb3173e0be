"""What a connector's Spark query is built from: each connector's module has
`stream(spark, spec) -> DataStreamWriter`, the query up to its start; the runtime adds the
checkpoint, the name and the trigger, which every connector shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from connect.converters import Converter, converter


@dataclass(frozen=True)
class QuerySpec:
    name: str
    config: Mapping[str, str]  # the connector's, as validated
    kafka: Mapping[str, str]  # kctl's Spark source and sink options for the worker's cluster
    worker: Mapping[str, str]  # the worker's settings (converters a connector does not set)
    checkpoint: Path  # the query's Spark checkpoint: a sink's own progress records go here too

    @property
    def client(self) -> dict[str, str]:
        """The worker's Kafka client settings, for a connector's own producers and admin calls."""
        return {key.removeprefix("kafka."): value for key, value in self.kafka.items()}

    def converter(self, side: str) -> Converter:
        """The connector's `side` ("key" or "value") converter, else the worker's."""
        return converter(side, self.config, self.worker)

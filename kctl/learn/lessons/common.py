"""Steps and checks several lessons make the same way."""

from __future__ import annotations

from kctl.learn.lab import Lab
from kctl.learn.lesson import Observed


def truncated(lab: Lab, topic: str, broker: int, cut_from: int, cut_to: int, log_end: int) -> Observed:
    """Whether ``broker`` truncated its replica of partition 0 from ``cut_from`` to ``cut_to``
    (a divergent tail a new leader never had) and its log now ends at ``log_end``."""
    p = lab.partition(topic)
    cut = p["truncations"].get(str(broker))
    held = (
        cut is not None
        and (cut["from"], cut["to"]) == (cut_from, cut_to)
        and p["log_end_offsets"][str(broker)] == log_end
    )
    said = (
        "no truncation"
        if cut is None
        else f"broker {broker} truncated its log from {cut['from']} to {cut['to']}"
    )
    return Observed(held, f"{said}; log ends {p['log_end_offsets']}")


def replicated_topic(lab: Lab, topic: str, record: str, **configs: str) -> dict:
    """A topic of one partition on 3 replicas holding 10 records (`record` formatted with
    0..9) written with acks=all and copied by every replica; its partition 0, whose leader
    and leader epoch are remembered as the old ones."""
    lab.create_topic(topic, 1, 3, **configs)
    lab.produce(topic, [record.format(i) for i in range(10)], acks="all")
    lab.wait(lambda: lab.partition(topic)["high_watermark"] == 10, "10 records replicated")
    p = lab.partition(topic)
    lab.seen["old_leader"], lab.seen["old_epoch"] = p["leader"], p["leader_epoch"]
    return p

"""`kctl consume --share-group`: the record loop of a share group member (KIP-932).

Many members may read one partition; the brokers hand each record to one of them at a time.
Each batch polled is written out and flushed, then every record of it is acknowledged as
--ack says (filtered-out records too: they were read) and the acknowledgements committed,
so a record is accepted only once it has been printed (at-least-once). Records beyond -n
are released at once, for the next member to get.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import cast

from kctl.kafka import share
from kctl.kafka.record import Record
from kctl.kafka.share import Ack, Message, ShareConsumer
from kctl.shell import console

POLL_TIMEOUT_S = 0.2
COMMIT_TIMEOUT_S = 30.0

Render = Callable[[Record], bytes]
Keep = Callable[[Record], bool]


class ShareReader:
    def __init__(self, consumer: ShareConsumer, render: Render, ack: Ack, keep: Keep | None = None) -> None:
        self.consumer = consumer
        self.render = cast(Callable[[Message], bytes], render)
        self.keep = cast(Callable[[Message], bool] | None, keep)
        self.ack = ack
        self.count = 0

    def run(self, limit: int | None) -> None:
        out = sys.stdout.buffer
        while limit is None or self.count < limit:
            messages = share.poll(self.consumer, POLL_TIMEOUT_S)
            if not messages:
                continue
            wanted = messages if limit is None else messages[: limit - self.count]
            extra = messages[len(wanted) :]
            chunks = [self.render(m) for m in wanted if self.keep is None or self.keep(m)]
            self.count += len(wanted)
            out.write(b"".join(chunks))
            out.flush()
            share.acknowledge(self.consumer, wanted, self.ack)
            share.acknowledge(self.consumer, extra, Ack.RELEASE)
            for failure in share.commit(self.consumer, COMMIT_TIMEOUT_S):
                console.warn(f"acknowledgement failed, the records will be delivered again: {failure}")

"""The checker: pure functions from a history to the anomalies it contains.

Each check is what Kafka promises, put as Jepsen's Kafka checker (jepsen.tests.kafka) puts it:

- lost-write: a write acknowledged (acks=all, or in a committed transaction) that the final
  read from the beginning did not return although it reached the partition's end (which it
  reads after every write was acknowledged or failed), or that no read returned although a
  read got past its offset. Kafka: "a committed message will not be lost, as long as there is
  at least one in sync replica alive".
- unseen: acknowledged, never read, and no read got as far as its offset (the final read did
  not finish): Jepsen cannot tell it from lost either.
- lost-after-read: a record a consumer read that the final read, which reached the
  partition's end, no longer returned, although its write was never acknowledged (an
  acknowledged one is a lost-write). Consumers read only below the high watermark, so the
  in-sync replicas all had it: the non-repeatable read the high watermark exists to prevent,
  and what a deposed leader's ISR change could cause (issue 22).
- duplicate: one value at more than one offset. Values are unique and nothing retries above
  the client, so only the idempotent producer's retries could write one twice.
- inconsistent-offsets: one partition and offset holding different values in different
  reads or acknowledgements.
- nonmonotonic-send: one producer's later write to a partition landing at a lower offset
  (an idempotent producer keeps its order per partition).
- nonmonotonic-poll, poll-skip: a reader going back, or jumping over records that exist (in
  the order of all reads, which skips transaction markers and aborted records), between two
  polls of one partition with no rebalance in between.
- skipped-by-commit: a group committed an offset beyond a record no member was ever given:
  whoever resumes from that commit never processes it.
- aborted-read (Jepsen's G1a): a read_committed reader returned a record of an aborted
  transaction.
- uncommitted-read: a read_committed reader returned a transaction's record before the
  transaction was asked to commit (or of a transaction never ended).
- torn-transaction: the final read returned some but not all of a committed transaction's
  writes.
- G1c: circular information flow between transactions: a cycle of write-write (ww: T1 wrote
  before T2 in a partition's offset order) and write-read (wr: T2's last read of a partition
  was T1's write) dependencies, at least one of them wr. A transaction's reads happen before
  its writes, so T2 reading T1 yet writing before T1 in some partition cannot happen when
  every read is of committed data. Cycles of ww edges alone (G0) are reported but allowed:
  Kafka appends the writes of concurrent transactions to each partition in whatever order they
  arrive. Read-write anti-dependencies are left out, as they are for Jepsen's wr edges, only
  more so: a consumer reads each partition at its own time, so read skew is Kafka's normal.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from kctl.verify.history import FINAL, History, Read, TxnEnd

EXAMPLES = 3


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome: how many anomalies and the first few, in words."""

    name: str
    what: str
    count: int = 0
    examples: tuple[str, ...] = ()
    bad: bool = True  # False: reported, but allowed by Kafka's model (G0)
    skipped: str | None = None  # why the history cannot answer this check

    @property
    def failed(self) -> bool:
        return self.bad and self.count > 0

    def to_json(self) -> dict:
        return {
            "check": self.name,
            "what": self.what,
            "count": self.count,
            "examples": list(self.examples),
            "anomaly": self.failed,
            "allowed": not self.bad,
            "skipped": self.skipped,
        }


@dataclass
class Verdict:
    checks: list[CheckResult]
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not any(c.failed for c in self.checks)

    @property
    def anomalies(self) -> int:
        return sum(c.count for c in self.checks if c.failed)

    def to_json(self) -> dict:
        return {
            "valid": self.valid,
            "anomalies": self.anomalies,
            "stats": self.stats,
            "checks": [c.to_json() for c in self.checks],
        }


class _Found:
    """Counts anomalies of one check and keeps the first EXAMPLES of them."""

    def __init__(self, name: str, what: str, bad: bool = True):
        self.name, self.what, self.bad = name, what, bad
        self.count = 0
        self.examples: list[str] = []

    def add(self, example: str) -> None:
        self.count += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(example)

    def result(self, skipped: str | None = None) -> CheckResult:
        return CheckResult(self.name, self.what, self.count, tuple(self.examples), self.bad, skipped)


@dataclass
class Observations:
    """Where each value was seen and what each offset held, over every ack and every read."""

    at: dict[tuple[int, int], set[str]] = field(default_factory=lambda: defaultdict(set))
    where: dict[str, set[tuple[int, int]]] = field(default_factory=lambda: defaultdict(set))

    @classmethod
    def of(cls, history: History) -> Observations:
        seen = cls()
        for ack in history.acks:
            if ack.offset is not None:  # None: acknowledged as a duplicate of an earlier send
                seen.add(ack.partition, ack.offset, ack.value)
        for r in history.reads:
            seen.add(r.partition, r.offset, r.value)
        return seen

    def add(self, partition: int, offset: int, value: str) -> None:
        self.at[(partition, offset)].add(value)
        self.where[value].add((partition, offset))


def check(history: History) -> Verdict:
    """Every check over `history`, in the order the verdict shows them."""
    seen = Observations.of(history)
    txn_of = {s.value: s.txn for s in history.sends if s.txn is not None}
    outcomes = {t.txn: t for t in history.txns}
    checks = [
        *lost_writes(history),
        lost_after_read(history, txn_of, outcomes),
        duplicates(seen, history.idempotent),
        inconsistent_offsets(seen),
        nonmonotonic_sends(history),
        *poll_order(history),
        skipped_by_commit(history),
        aborted_reads(history, txn_of, outcomes),
        uncommitted_reads(history, txn_of, outcomes),
        torn_transactions(history, txn_of, outcomes),
        *cycles(history, seen, txn_of, outcomes),
    ]
    return Verdict(checks, stats(history))


def stats(history: History) -> dict[str, int]:
    final_reads = [r for r in history.reads if r.process == FINAL]
    members = {c.process for c in history.commits}
    return {
        "sent": len(history.sends),
        "acknowledged": len(_acknowledged(history)),
        "failed": sum(1 for f in history.fails if f.txn is None),
        "polled": len({r.value for r in history.reads if r.process in members}),
        "final_read": len(final_reads),
        "commits": sum(1 for c in history.commits if c.error is None),
        "txn_committed": sum(1 for t in history.txns if t.outcome == "committed"),
        "txn_aborted": sum(1 for t in history.txns if t.outcome == "aborted"),
        "txn_unknown": sum(1 for t in history.txns if t.outcome == "unknown"),
        "faults": sum(1 for f in history.faults if f.phase == "start" and f.error is None),
        **_faults_by_kind(history),
    }


def _faults_by_kind(history: History) -> dict[str, int]:
    """`faults.<kind>`: how many faults of each kind were injected."""
    counts: dict[str, int] = defaultdict(int)
    for f in history.faults:
        if f.phase == "start" and f.error is None:
            counts[f"faults.{f.kind}"] += 1
    return dict(sorted(counts.items()))


def _acknowledged(history: History) -> dict[str, tuple[int, int | None]]:
    """Value -> (partition, offset) of every write the cluster promised to keep: acked outside
    a transaction, or acked in a transaction that committed."""
    committed = {t.txn for t in history.txns if t.outcome == "committed"}
    return {a.value: (a.partition, a.offset) for a in history.acks if a.txn is None or a.txn in committed}


def lost_writes(history: History) -> list[CheckResult]:
    """lost-write and unseen (Jepsen's rules, the final read standing for its last poll)."""
    lost = _Found("lost-write", "acknowledged writes the final read (or a read past them) did not return")
    unseen = _Found("unseen", "acknowledged writes no read reached (the final read did not finish)")
    final = history.final
    final_values = {r.value for r in history.reads if r.process == FINAL}
    read_values = {r.value for r in history.reads}
    highest: dict[int, int] = defaultdict(lambda: -1)
    for r in history.reads:
        highest[r.partition] = max(highest[r.partition], r.offset)
    for value, (p, o) in sorted(_acknowledged(history).items(), key=lambda kv: (kv[1][0], kv[1][1] or -1)):
        if value in final_values:
            continue
        at = f"{p}/{o}" if o is not None else f"{p} (offset not reported)"
        if final is not None and final.reached.get(p, False):
            # The final read starts after every write was acknowledged or failed: a partition
            # that now ends at or below an acknowledged offset was cut back under it.
            end = final.ends.get(p, -1)
            cut = "" if o is None or o < end else f" (the partition now ends at {end})"
            lost.add(f"{value} acked at {at}, not in the final read{cut}")
        elif value in read_values:
            continue  # read before; the final read stopped short of it
        elif o is not None and o < highest[p]:
            lost.add(f"{value} acked at {at}, never read; {p}/{highest[p]} was")
        else:
            unseen.add(f"{value} acked at {at}, never read")
    return [lost.result(), unseen.result()]


def lost_after_read(history: History, txn_of: dict[str, str], outcomes: dict[str, TxnEnd]) -> CheckResult:
    """lost-after-read: read by a consumer, not acknowledged, gone from a final read that got
    to the partition's end. Records of transactions that did not commit are left to the
    transaction checks."""
    found = _Found("lost-after-read", "records a consumer read that the final read no longer returned")
    final = history.final
    if final is None:
        return found.result()
    final_values = {r.value for r in history.reads if r.process == FINAL}
    acknowledged = _acknowledged(history)
    reported: set[str] = set()
    for r in history.reads:
        txn = txn_of.get(r.value)
        if (
            r.process == FINAL
            or r.value in final_values
            or r.value in acknowledged
            or r.value in reported
            or (txn is not None and (txn not in outcomes or outcomes[txn].outcome != "committed"))
            or not final.reached.get(r.partition, False)
        ):
            continue
        reported.add(r.value)
        found.add(f"{r.value} read by {r.process} at {r.partition}/{r.offset}, not in the final read")
    return found.result()


def duplicates(seen: Observations, idempotent: bool = True) -> CheckResult:
    what = "values at more than one offset"
    found = _Found(
        "duplicate",
        what if idempotent else what + " (allowed: the producers were not idempotent)",
        idempotent,
    )
    for value, places in sorted(seen.where.items()):
        if len(places) > 1:
            found.add(f"{value} at {', '.join(f'{p}/{o}' for p, o in sorted(places))}")
    return found.result()


def inconsistent_offsets(seen: Observations) -> CheckResult:
    found = _Found("inconsistent-offsets", "offsets that held different values in different reads or acks")
    for (p, o), values in sorted(seen.at.items()):
        if len(values) > 1:
            found.add(f"{p}/{o} held {', '.join(sorted(values))}")
    return found.result()


def nonmonotonic_sends(history: History) -> CheckResult:
    what = "a producer's later write to a partition at a lower offset"
    if not history.idempotent:
        what += " (allowed: the producers were not idempotent)"
    found = _Found("nonmonotonic-send", what, history.idempotent)
    order = {s.value: i for i, s in enumerate(history.sends)}
    last: dict[tuple[str, int], tuple[int, str]] = {}
    for ack in sorted(history.acks, key=lambda a: order.get(a.value, a.line)):
        if ack.offset is None:
            continue
        key = (ack.process, ack.partition)
        previous = last.get(key)
        if previous is not None and ack.offset <= previous[0]:
            found.add(
                f"{ack.process}: {ack.value} at {ack.partition}/{ack.offset} after "
                f"{previous[1]} at {ack.partition}/{previous[0]}"
            )
        last[key] = (ack.offset, ack.value)
    return found.result()


def poll_order(history: History) -> list[CheckResult]:
    """nonmonotonic-poll and poll-skip, per reader and partition, reset by each rebalance."""
    back = _Found("nonmonotonic-poll", "a reader went back to an offset at or below one it had read")
    skip = _Found("poll-skip", "a reader jumped over records between two polls of one partition")
    index = _version_index(history.reads)
    resets: dict[str, list[int]] = defaultdict(list)  # lines of each reader's rebalances, ascending
    for a in history.assignments:
        resets[a.process].append(a.line)
    last: dict[tuple[str, int], tuple[int, int]] = {}  # (process, partition) -> (offset, line)
    for r in history.reads:
        key = (r.process, r.partition)
        previous = last.get(key)
        last[key] = (r.offset, r.line)
        lines = resets[r.process]
        if previous is None or bisect_right(lines, previous[1]) < bisect_left(lines, r.line):
            continue
        q = previous[0]
        if r.offset <= q:
            back.add(f"{r.process}: {r.partition}/{r.offset} after {r.partition}/{q}")
        elif index[r.partition].get(r.offset, 0) - index[r.partition].get(q, 0) > 1:
            gap = index[r.partition][r.offset] - index[r.partition][q] - 1
            skip.add(f"{r.process}: {r.partition}/{q} -> {r.partition}/{r.offset}, {gap} record(s) skipped")
    return [back.result(), skip.result()]


def _version_index(reads: Iterable[Read]) -> dict[int, dict[int, int]]:
    """Partition -> offset -> its rank among the offsets any reader returned. Dense, so the
    offsets of transaction markers and aborted records, which no read_committed reader gets,
    are no gap."""
    offsets: dict[int, set[int]] = defaultdict(set)
    for r in reads:
        offsets[r.partition].add(r.offset)
    return defaultdict(dict, {p: {o: i for i, o in enumerate(sorted(os))} for p, os in offsets.items()})


def skipped_by_commit(history: History) -> CheckResult:
    found = _Found("skipped-by-commit", "records below a group's committed offset that no member was given")
    if history.final is None:
        return found.result("no final read")
    members = {c.process for c in history.commits}
    given = {r.value for r in history.reads if r.process in members}
    committed: dict[int, int] = {}
    for c in history.commits:
        if c.error is None:
            for p, o in c.offsets.items():
                committed[p] = max(committed.get(p, 0), o)
    for r in sorted(history.reads, key=lambda r: (r.partition, r.offset)):
        if r.process == FINAL and r.offset < committed.get(r.partition, 0) and r.value not in given:
            found.add(f"{r.value} at {r.partition}/{r.offset}, below the commit {committed[r.partition]}")
    return found.result()


def aborted_reads(history: History, txn_of: dict[str, str], outcomes: dict[str, TxnEnd]) -> CheckResult:
    found = _Found("aborted-read", "records of aborted transactions returned to read_committed readers (G1a)")
    if not history.read_committed:
        return found.result("the readers read uncommitted")
    for r in history.reads:
        txn = txn_of.get(r.value)
        if txn is not None and txn in outcomes and outcomes[txn].outcome == "aborted":
            found.add(f"{r.process} read {r.value} at {r.partition}/{r.offset} of aborted {txn}")
    return found.result()


def uncommitted_reads(history: History, txn_of: dict[str, str], outcomes: dict[str, TxnEnd]) -> CheckResult:
    found = _Found(
        "uncommitted-read", "transactional records returned to read_committed readers before the commit"
    )
    if not history.read_committed:
        return found.result("the readers read uncommitted")
    for r in history.reads:
        txn = txn_of.get(r.value)
        if txn is None:
            continue
        end = outcomes.get(txn)
        if end is None:
            found.add(f"{r.process} read {r.value} of {txn}, which never committed")
        elif end.outcome != "aborted" and r.time < end.time:
            found.add(
                f"{r.process} read {r.value} of {txn} at {r.time:.3f}s, commit asked at {end.time:.3f}s"
            )
    return found.result()


def torn_transactions(history: History, txn_of: dict[str, str], outcomes: dict[str, TxnEnd]) -> CheckResult:
    found = _Found("torn-transaction", "committed transactions the final read returned only part of")
    if not txn_of:
        return found.result("no transactions")
    if history.final is None:
        return found.result("no final read")
    final_values = {r.value for r in history.reads if r.process == FINAL}
    writes: dict[str, list[str]] = defaultdict(list)
    for value, txn in txn_of.items():
        if txn is not None:
            writes[txn].append(value)
    for txn, values in sorted(writes.items()):
        end = outcomes.get(txn)
        if end is None or end.outcome == "aborted":
            continue
        got = [v for v in values if v in final_values]
        if 0 < len(got) < len(values):
            missing = sorted(set(values) - set(got))
            found.add(
                f"{txn} ({end.outcome}): read {len(got)} of {len(values)} writes, not {', '.join(missing)}"
            )
    return found.result()


def cycles(
    history: History, seen: Observations, txn_of: dict[str, str], outcomes: dict[str, TxnEnd]
) -> list[CheckResult]:
    """G1c (bad) and the dependency cycles interleaved transactions explain (allowed)."""
    g1c = _Found("G1c", "cycles of write-write and write-read dependencies no order in time allows")
    interleaved = _Found(
        "interleaved-cycles",
        "Jepsen's G0 and G1c cycles that overlapping transactions explain (allowed in Kafka)",
        False,
    )
    if not txn_of:
        return [g1c.result("no transactions"), interleaved.result("no transactions")]
    visible = {t for t, end in outcomes.items() if end.outcome != "aborted"}
    deps = _dependencies(history, seen, txn_of, visible)
    points = _points(history, deps, visible)
    contradicted: set[str] = set()
    for component in _strongly_connected(points):
        inside = set(component)
        start = next(a for a in component if a.endswith(COMMITS) for b in points[a] if b in inside)
        first = (start, next(b for b in sorted(points[start]) if b in inside))
        g1c.add(_describe_cycle(points, first, inside))
        contradicted |= {p.rsplit(" ", 1)[0] for p in component}
    for component in _strongly_connected(deps):
        if not contradicted & set(component):
            inside = set(component)
            a = component[0]
            interleaved.add(
                _describe_cycle(deps, (a, next(b for b in sorted(deps[a]) if b in inside)), inside)
            )
    return [g1c.result(), interleaved.result()]


BEGINS, COMMITS = " begins", " commits"


def _dependencies(
    history: History, seen: Observations, txn_of: dict[str, str], visible: set[str]
) -> dict[str, dict[str, str]]:
    """Jepsen's ww and wr edges between visible (committed or unknown) transactions:
    T1 -> T2 when T1's write precedes T2's in a partition's offsets (ww), or when T2's
    last read of a partition returned T1's write (wr)."""
    edges: dict[str, dict[str, str]] = defaultdict(dict)
    for chain in _version_orders(seen, txn_of, visible).values():
        for (a, va), (b, vb) in zip(chain, chain[1:]):
            if a != b:
                edges[a].setdefault(b, f"ww: {va} before {vb}")
    last_read: dict[tuple[str, int], Read] = {}
    for r in history.reads:
        if r.txn is not None:
            key = (r.txn, r.partition)
            if key not in last_read or r.offset > last_read[key].offset:
                last_read[key] = r
    for (reader, _), r in last_read.items():
        writer = txn_of.get(r.value)
        if writer in visible and writer != reader and reader in visible:
            edges[writer][reader] = f"wr: {reader} read {r.value}"
    return edges


def _points(
    history: History, deps: dict[str, dict[str, str]], visible: set[str]
) -> dict[str, dict[str, str]]:
    """The dependencies as an order of moments: each transaction "begins" (its first send,
    after its reads) before it "commits" (the commit is asked for: after all its writes were
    appended, before any marker). ww T1 -> T2: T1 begins before T2 commits (T1's write was
    appended first). wr T1 -> T2: T1 commits before T2 begins (T2 read T1's write, which a
    read_committed reader gets only after T1's marker). One process's transactions follow
    each other. A cycle here is a contradiction; a cycle of `deps` may not be one, since
    Kafka appends each transaction's writes whenever they arrive."""
    points: dict[str, dict[str, str]] = defaultdict(dict)
    for t in visible:
        points[t + BEGINS][t + COMMITS] = f"{t} runs"
    for a, out in deps.items():
        for b, why in out.items():
            if why.startswith("ww"):
                points[a + BEGINS][b + COMMITS] = why
            else:
                points[a + COMMITS][b + BEGINS] = why
    previous: dict[str, str] = {}
    for end in history.txns:
        if end.txn in visible:
            if end.process in previous:
                points[previous[end.process] + COMMITS][end.txn + BEGINS] = (
                    f"process {end.process}: then {end.txn}"
                )
            previous[end.process] = end.txn
    return points


def _version_orders(
    seen: Observations, txn_of: dict[str, str], visible: set[str]
) -> dict[int, list[tuple[str, str]]]:
    """Partition -> the (transaction, value) writes of visible transactions in offset order."""
    chains: dict[int, list[tuple[int, str, str]]] = defaultdict(list)
    for (p, o), values in seen.at.items():
        for v in values:
            txn = txn_of.get(v)
            if txn is not None and txn in visible:
                chains[p].append((o, txn, v))
    return {p: [(t, v) for _, t, v in sorted(c)] for p, c in chains.items()}


def _strongly_connected(edges: dict[str, dict[str, str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    nodes = sorted(set(edges) | {b for out in edges.values() for b in out})
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, {})))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe_cycle(edges: dict[str, dict[str, str]], first: tuple[str, str], inside: set[str]) -> str:
    """The cycle through edge `first` (a -> b): the shortest path back from b to a, in words."""
    a, b = first
    previous: dict[str, str] = {b: b}
    frontier = [b]
    while frontier and a not in previous:
        nxt = []
        for node in frontier:
            for succ in sorted(edges[node]):
                if succ in inside and succ not in previous:
                    previous[succ] = node
                    nxt.append(succ)
        frontier = nxt
    path = [a]
    while path[-1] != b:
        path.append(previous[path[-1]])
    path.reverse()  # b ... a
    steps = [f"{a} -> {b} ({edges[a][b]})"]
    steps += [f"{x} -> {y} ({edges[x][y]})" for x, y in zip(path, path[1:])]
    return "; ".join(steps)

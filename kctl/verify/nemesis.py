"""The nemesis: Jepsen's name for the process that injects faults while the workload runs.

One fault at a time, on the local cluster's real daemons, through the same operations as
`kctl broker`: kill -9 a broker and start it again, pause it (SIGSTOP) and resume it
(SIGCONT), kill -9 whichever broker is the controller, or throttle what a broker copies from
its leaders; on request, faults that overlap (lone-broker, kill-pause) and network faults
(partition: Jepsen's shapes in turn; loss: packets lost at random). Each fault lasts
--fault-duration, then is healed; the next starts --fault-interval later (with --fault-count,
until that many were injected and healed: `finished` is set then). Kinds take turns,
and the broker is drawn at random (seeded, so a run can be repeated). Every start and end
goes to the history with its time; `heal_all` undoes whatever is still in effect, so a run
never leaves a broker paused or dead.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kctl.cluster import brokerctl, brokerview, localcluster, netfaults
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode
from kctl.verify.history import HistoryWriter

if TYPE_CHECKING:
    from brokerd.state.cluster_view import ClusterView

DEFAULT_KINDS = ("kill", "pause", "kill-controller", "throttle")
NETWORK_KINDS = ("partition", "loss")
KINDS = (*DEFAULT_KINDS, "lone-broker", "kill-pause", *NETWORK_KINDS)
THROTTLE_BYTES_PER_S = 20_000
# The partitions the `partition` kind takes turns with, as Jepsen draws them: one broker
# isolated, a partition's leader isolated, the controller isolated, random halves, and two
# halves with a bridge (one broker that reaches both).
PARTITION_SHAPES = ("one", "leader", "controller", "halves", "bridge")
LOSS_PERCENT = 5  # of every broker's packets, in and out
# How long a broker the nemesis starts again may take to answer. A second on an idle machine,
# but tens on a busy one; a heal given up on (as `kctl broker start` does after 10 s) would
# leave the cluster a broker short for the rest of the run, and with it maybe a group
# coordinator or a transaction coordinator whose partition only that broker held.
HEAL_READY_TIMEOUT_S = 6 * localcluster.READY_TIMEOUT_S
PROCESS = "nemesis"


@dataclass
class Active:
    """The fault in effect: its kind and broker."""

    kind: str
    broker: int
    paused: list[int] = field(default_factory=list)  # paused until resumed (lone-broker, kill-pause)
    killed: bool = False  # `broker` was killed (lone-broker, kill-pause): started when healed


class Nemesis(threading.Thread):
    def __init__(
        self,
        state: ClusterView,
        history: HistoryWriter,
        kinds: tuple[str, ...],
        interval: float,
        duration: float,
        seed: int | None,
        say: Callable[[str], None],
        fault_count: int | None = None,
    ):
        super().__init__(name=PROCESS, daemon=True)
        self.state = state
        self.history = history
        self.kinds = kinds
        self.interval = interval
        self.duration = duration
        self.random = random.Random(seed)
        self.say = say
        self.fault_count = fault_count
        self.stopping = threading.Event()
        self.finished = threading.Event()  # fault_count faults injected and healed, or failed
        self.active: Active | None = None
        self.injected = 0
        self.error: BaseException | None = None
        self._partitions = 0  # turns of the partition kind so far: its shape

    def run(self) -> None:
        try:
            turn = 0
            while not self._done() and not self.stopping.wait(self.interval):
                self._inject(self.kinds[turn % len(self.kinds)])
                turn += 1
                self.stopping.wait(self.duration)
                self.heal()
        except BaseException as exc:  # reported by the command, after healing
            self.error = exc
        finally:
            self.finished.set()

    def _done(self) -> bool:
        """Whether --fault-count faults have been injected (each healed before the next)."""
        return self.fault_count is not None and self.injected >= self.fault_count

    def stop(self) -> None:
        """Stop injecting and heal what is in effect."""
        self.stopping.set()
        self.join()
        self.heal()

    def _inject(self, kind: str) -> None:
        if kind == "lone-broker":
            self._lone_broker()
            return
        if kind == "kill-pause":
            self._kill_then_pause()
            return
        if kind in NETWORK_KINDS:
            self._network_fault(kind)
            return
        target = self._choose(kind)
        if target is None:
            return
        try:
            if kind in ("kill", "kill-controller"):
                brokerctl.kill(self.state, target)
            elif kind == "pause":
                brokerctl.pause(self.state, target)
            else:
                brokerctl.throttle(self.state, target, THROTTLE_BYTES_PER_S)
        except KctlError as exc:  # the broker changed state under us: no fault this time
            self.history.write(
                "fault", process=PROCESS, phase="start", kind=kind, broker=target, error=exc.message
            )
            return
        self.active = Active(kind, target)
        self.injected += 1
        self.history.write("fault", process=PROCESS, phase="start", kind=kind, broker=target)
        self.say(f"nemesis: {kind} broker {target}")

    def _lone_broker(self) -> None:
        """Pause every broker but one: past broker.session.timeout.ms the ISRs shrink to it and
        it goes on alone. After --fault-duration it is killed and the others resumed, so a
        leader can only come from replicas that missed what it took alone: an unclean election
        (unclean.leader.election.enable) loses that; with acks=all and min.insync.replicas=2 it
        never acknowledged any of it. It is started again when the fault ends."""
        alive = [b.id for b in brokerview.view(self.state) if b.state == brokerview.ALIVE]
        if len(alive) < 2:
            return
        lone = self.random.choice(alive)
        active = Active("lone-broker", lone)
        try:
            for other in alive:
                if other != lone:
                    brokerctl.pause(self.state, other)
                    active.paused.append(other)
        except KctlError as exc:
            self._resume(active)
            self._record_start(active, exc)
            return
        self.active = active
        self._record_start(active)
        self.say(f"nemesis: broker {lone} alone, {_ids(active.paused)} paused")
        self.stopping.wait(self.duration)
        try:
            brokerctl.kill(self.state, lone)
            active.killed = True
        except KctlError:
            pass  # it died by itself: the others are resumed all the same
        resumed = self._resume(active)
        self.say(f"nemesis: killed broker {lone}, resumed {_ids(resumed)}")

    def _kill_then_pause(self) -> None:
        """Overlapping faults, the README's failover demo: kill one broker, then pause another
        for --fault-duration (longer than replica.lag.time.max.ms, so its leaderships move
        away and, resumed, it finds its followers lagging by its own clock), then resume it.
        A deposed leader's ISR change written under the new leader's epochs (issue 22)
        showed up this way. The killed broker is started when the fault ends."""
        alive = [b.id for b in brokerview.view(self.state) if b.state == brokerview.ALIVE]
        if len(alive) < 2:
            return
        killed, paused = self.random.sample(alive, 2)
        active = Active("kill-pause", killed)
        try:
            brokerctl.kill(self.state, killed)
            active.killed = True
            brokerctl.pause(self.state, paused)
            active.paused.append(paused)
        except KctlError as exc:
            self.active = active  # heal starts what was killed
            self._record_start(active, exc)
            return
        self.active = active
        self._record_start(active)
        self.say(f"nemesis: killed broker {killed}, paused broker {paused}")
        self.stopping.wait(self.duration)
        self.say(f"nemesis: resumed {_ids(self._resume(active))}")

    def _network_fault(self, kind: str) -> None:
        """A partition of the next shape, or LOSS_PERCENT of every broker's packets lost;
        healed by removing every network fault of the cluster."""
        alive = [b.id for b in brokerview.view(self.state) if b.state == brokerview.ALIVE]
        if len(alive) < 2:
            return
        detail: dict = {}
        try:
            if kind == "loss":
                for broker in alive:
                    netfaults.lose(self.state, broker, LOSS_PERCENT)
                detail = {"loss_percent": LOSS_PERCENT}
                told = f"{LOSS_PERCENT}% of every broker's packets lost"
            else:
                shape = PARTITION_SHAPES[self._partitions % len(PARTITION_SHAPES)]
                self._partitions += 1
                sides = self._sides(shape, alive)
                netfaults.partition(self.state, sides, netfaults.quorum_side(self.state, sides))
                detail = {"shape": shape, "sides": [sorted(side) for side in sides]}
                told = f"partition ({shape}) " + " / ".join(_ids(sorted(side)) for side in sides)
        except KctlError as exc:
            netfaults.heal(self.state, None)
            self.history.write(
                "fault", process=PROCESS, phase="start", kind=kind, broker=alive[0], error=exc.message
            )
            return
        broker = min(detail.get("sides", [[alive[0]]])[0])
        self.active = Active(kind, broker)
        self.injected += 1
        self.history.write("fault", process=PROCESS, phase="start", kind=kind, broker=broker, **detail)
        self.say(f"nemesis: {told}")

    def _sides(self, shape: str, alive: list[int]) -> list[set[int]]:
        """The sides of a partition of ``shape`` over the live brokers; brokers on no side (a
        bridge) reach both."""
        if shape in ("leader", "controller"):
            chosen = self._leader() if shape == "leader" else self._choose("kill-controller")
            lone = chosen if chosen in alive else self.random.choice(alive)
        else:
            lone = self.random.choice(alive)
        rest = [b for b in alive if b != lone]
        if shape == "halves":
            shuffled = self.random.sample(alive, len(alive))
            half = len(shuffled) // 2
            return [set(shuffled[:half]), set(shuffled[half:])]
        if shape == "bridge" and len(rest) >= 2:
            bridge = self.random.choice(rest)
            others = [b for b in rest if b != bridge]
            return [{lone}, set(others)]
        return [{lone}, set(rest)]

    def _leader(self) -> int | None:
        """The leader of a partition of some topic other than Kafka's internal ones."""
        leaders = [
            p.leader
            for name, topic in self.state.topics().items()
            if not name.startswith("__")
            for p in topic.partitions.values()
        ]
        return self.random.choice(leaders) if leaders else None

    def _record_start(self, active: Active, error: KctlError | None = None) -> None:
        """The history's line for an overlapping fault's start: the brokers it paused, or
        why it could not be put in effect."""
        outcome: dict = {"paused": active.paused} if error is None else {"error": error.message}
        if error is None:
            self.injected += 1
        self.history.write(
            "fault", process=PROCESS, phase="start", kind=active.kind, broker=active.broker, **outcome
        )

    def _resume(self, active: Active) -> list[int]:
        resumed, active.paused = active.paused, []
        for broker in resumed:
            try:
                brokerctl.resume(self.state, broker)
            except KctlError:
                pass  # not running any more: nothing to resume
        return resumed

    def _choose(self, kind: str) -> int | None:
        alive = [b.id for b in brokerview.view(self.state) if b.state == brokerview.ALIVE]
        if kind == "kill-controller":
            controller = self.state.controller()
            return controller[0] if controller is not None and controller[0] in alive else None
        return self.random.choice(alive) if alive else None

    def heal(self) -> None:
        """Undo the fault in effect, if any: start, resume or unthrottle its broker."""
        active, self.active = self.active, None
        if active is None:
            return
        error = None
        try:
            if active.kind in ("lone-broker", "kill-pause"):
                self._resume(active)
                if active.killed:
                    brokerctl.start(self.state, active.broker, HEAL_READY_TIMEOUT_S)
            elif active.kind in ("kill", "kill-controller"):
                brokerctl.start(self.state, active.broker, HEAL_READY_TIMEOUT_S)
            elif active.kind == "pause":
                brokerctl.resume(self.state, active.broker)
            elif active.kind in NETWORK_KINDS:
                netfaults.heal(self.state, None)
            else:
                brokerctl.throttle(self.state, active.broker, None)
        except KctlError as exc:
            error = exc.message
        self.history.write(
            "fault", process=PROCESS, phase="end", kind=active.kind, broker=active.broker, error=error
        )
        self.say(f"nemesis: healed {active.kind} of broker {active.broker}")


def _ids(brokers: list[int]) -> str:
    return ", ".join(str(b) for b in brokers) or "none"


def parse_kinds(text: str) -> tuple[str, ...]:
    """`kill,pause`: the fault kinds to take turns with; unknown names are exit 5."""
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise KctlError(
            f"invalid --nemesis {text!r}: expected a comma-separated list of {', '.join(KINDS)}",
            ExitCode.INVALID_INPUT,
        )
    return kinds

"""The controller, its epoch and the zombie: a paused controller loses its lease, another broker
takes over with a higher controller epoch, and the old one wakes up fenced by that epoch."""

from __future__ import annotations

from kctl.learn.lab import Lab
from kctl.learn.lesson import Ask, Check, Experiment, Explain, Lesson, Narrate, Observed, Show

TOPIC = "lesson"
SESSION_TIMEOUT_MS = 1500


def _start(lab: Lab) -> str:
    lab.create_topic(TOPIC, 3, 3)
    controller = lab.wait(lab.controller, "a controller")
    lab.seen["old"], lab.seen["old_epoch"] = controller
    return (
        f"broker {controller[0]} is the controller, controller epoch {controller[1]}; topic {TOPIC} created"
    )


def _pause(lab: Lab) -> str:
    old, epoch = lab.seen["old"], lab.seen["old_epoch"]
    lab.pause(old)

    def successor() -> tuple[int, int] | None:
        c = lab.controller()
        return c if c is not None and c[1] > epoch and c[0] != old else None

    new = lab.wait(successor, "another broker to become controller")
    lab.seen["new"], lab.seen["new_epoch"] = new
    return f"broker {old} paused (SIGSTOP); broker {new[0]} claimed the controller with epoch {new[1]}"


def _taken_over(lab: Lab) -> Observed:
    held = lab.seen["new"] != lab.seen["old"] and lab.seen["new_epoch"] == lab.seen["old_epoch"] + 1
    return Observed(
        held,
        f"controller broker {lab.seen['old']} (epoch {lab.seen['old_epoch']}) -> broker "
        f"{lab.seen['new']} (epoch {lab.seen['new_epoch']})",
    )


def _wake(lab: Lab) -> str:
    old = lab.seen["old"]
    lab.resume(old)

    def zombie() -> dict | None:
        f = lab.state.fenced_controller()
        return f if f is not None and f["broker_id"] == old else None

    fenced = lab.wait(zombie, f"broker {old} to find out it was superseded")
    lab.seen["fenced"] = fenced
    lab.seen["after"] = lab.controller()
    return (
        f"broker {old} resumed, still believing it is controller of epoch {fenced['epoch']}; its first "
        f"write met epoch {fenced['current_epoch']}"
    )


def _fenced(lab: Lab) -> Observed:
    fenced, after = lab.seen["fenced"], lab.seen["after"]
    held = (
        fenced["epoch"] == lab.seen["old_epoch"]
        and fenced["current_epoch"] == lab.seen["new_epoch"]
        and after == (lab.seen["new"], lab.seen["new_epoch"])
    )
    return Observed(
        held,
        f"broker {fenced['broker_id']} refused at epoch {fenced['epoch']} < {fenced['current_epoch']}; "
        f"the controller is still broker {after[0] if after else '-'} (epoch {after[1] if after else '-'})",
    )


LESSON = Lesson(
    name="controller",
    title="The controller, its epoch and the zombie",
    summary="pause the controller: another takes over with a higher epoch; the old one wakes up fenced",
    seeds=("003", "001"),
    brokers=3,
    broker_config={"broker.session.timeout.ms": str(SESSION_TIMEOUT_MS)},
    steps=(
        Narrate(
            "One broker of the cluster is the **controller**: it creates topics, elects partition "
            "leaders and watches brokers fail. Each controller has a **controller epoch**, one more than "
            f"the one before. In this cluster a broker that misses its lease for {SESSION_TIMEOUT_MS} ms "
            "counts as gone."
        ),
        Experiment("find the controller", _start),
        Show("the controller is marked with *", None),
        Ask(
            "We pause the controller (SIGSTOP) for longer than its lease. What do the other brokers do?",
            (
                "Wait for it: there is only one controller.",
                "Another broker claims the controller role, with the controller epoch one higher.",
                "The cluster stops serving until the controller is back.",
            ),
            "b",
            seed="003",
        ),
        Experiment("pause the controller", _pause),
        Show("a new controller, a new epoch", None),
        Check("another broker became controller with the next controller epoch", _taken_over),
        Ask(
            "The old controller wakes up. It still believes it is the controller, of the old epoch. "
            "What happens? (This is the split-brain problem.)",
            (
                "Two controllers now give orders, and the cluster's state becomes inconsistent.",
                "Its first write carries the old epoch, is refused because a higher one exists, and it "
                "resigns: it was a zombie.",
                "It takes the role back, since it was controller first.",
                "The new controller steps down to avoid a conflict.",
            ),
            "b",
            seed="003",
        ),
        Experiment("resume the old controller", _wake),
        Show("the zombie fenced", None),
        Check("the zombie's write with the old epoch was refused, and the new controller stayed", _fenced),
        Explain(
            "Split-brain is commonly solved with a generation clock, which is simply a monotonically "
            "increasing number to indicate a server's generation. In Kafka, the generation clock is "
            "implemented through an epoch number. If the old leader had an epoch number of '1', the "
            "new one would have '2'. This epoch is included in every request that is sent from the "
            "Controller to other brokers, and brokers can easily differentiate the real Controller by "
            "simply trusting the Controller with the highest number.",
            "003",
            "Here the epoch lives beside the metadata log, kctl's stand-in for ZooKeeper or the "
            "KRaft quorum: a controller decision is written with its epoch, and one from an epoch "
            "lower than the current one is refused before anything is appended.",
        ),
    ),
)

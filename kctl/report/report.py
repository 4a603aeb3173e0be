"""`kctl report FILE --html OUT --svg OUT`: the timeline of a `kctl watch --record` file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kctl.report import history, recording
from kctl.report.recording import PartitionTimeline
from kctl.shell import console
from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode

MAX_PANELS = 8  # more is no longer readable on a slide


def report(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", show_default=False, help="A recording written by `kctl watch --record FILE`."
        ),
    ],
    html_out: Annotated[
        Path | None,
        typer.Option(
            "--html",
            metavar="OUT",
            dir_okay=False,
            show_default=False,
            help="Write a self-contained HTML page: the timeline, then the faults, the changes "
            "narrated and any anomalies as tables.",
        ),
    ] = None,
    svg_out: Annotated[
        Path | None,
        typer.Option(
            "--svg", metavar="OUT", dir_okay=False, show_default=False, help="Write the timeline as SVG."
        ),
    ] = None,
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC",
            show_default=False,
            help="Only this topic (repeatable). Default: every topic recorded.",
        ),
    ] = None,
    partition: Annotated[
        list[int] | None,
        typer.Option(
            "--partition",
            "-p",
            metavar="N",
            min=0,
            show_default=False,
            help="Only this partition (repeatable). Default: every partition.",
        ),
    ] = None,
    verify_history: Annotated[
        Path | None,
        typer.Option(
            "--verify-history",
            metavar="FILE",
            dir_okay=False,
            show_default=False,
            help="A `kctl verify` history: mark the faults its nemesis injected (hatched) and the "
            "anomalies it shows (lost writes where they were acknowledged) on the timeline.",
        ),
    ] = None,
) -> None:
    """Draw a `kctl watch --record` file as a timeline to put on a slide.

    One panel per partition (at most 8; choose with --topic and --partition): above, each
    replica's log end offset, the high watermark and the last stable offset over time;
    below, the ISR size against min.insync.replicas, shaded red while acks=all produce is
    refused. Leader changes are dashed lines labelled with the new leader and its leader
    epoch; brokers paused, down or throttled are shaded bands; the faults and anomalies of a
    `kctl verify` history are hatched bands and red lines. `--svg` writes the picture, `--html`
    a page with the picture and the faults, narrated changes and anomalies as tables; give
    either or both.
    """
    if html_out is None and svg_out is None:
        raise KctlError("nothing to write: give --html OUT, --svg OUT or both", ExitCode.USAGE)
    recorded = recording.read(file)
    timelines, note = choose(recorded.partitions, topic or [], partition or [])
    findings = history.Findings() if verify_history is None else history.read(verify_history)
    # matplotlib takes a second to import: only this command pays for it
    from kctl.report import chart, page

    picture = chart.svg(recorded, timelines, findings)
    if note:
        console.warn(note)
    if svg_out is not None:
        _write(svg_out, picture)
        console.info(f"wrote {svg_out}")
    if html_out is not None:
        _write(html_out, page.html_page(recorded, timelines, findings, picture, note))
        console.info(f"wrote {html_out}")


def choose(
    timelines: list[PartitionTimeline], topics: list[str], partitions: list[int]
) -> tuple[list[PartitionTimeline], str | None]:
    """The partitions to draw, capped at MAX_PANELS, and a note saying what was left out."""
    recorded = {t.topic for t in timelines}
    unknown = sorted(set(topics) - recorded)
    if unknown:
        listed = ", ".join(sorted(recorded)) or "none"
        raise KctlError(
            f"topic {unknown[0]!r} is not in the recording (recorded: {listed})", ExitCode.NOT_FOUND
        )
    chosen = [
        t
        for t in timelines
        if (not topics or t.topic in topics) and (not partitions or t.partition in partitions)
    ]
    if not chosen:
        raise KctlError(f"partition {partitions[0]} is not in the recording", ExitCode.NOT_FOUND)
    if len(chosen) <= MAX_PANELS:
        return chosen, None
    return chosen[:MAX_PANELS], (
        f"drew {MAX_PANELS} of {len(chosen)} partitions ({chosen[0].name} to {chosen[MAX_PANELS - 1].name}); "
        "choose others with --topic and --partition"
    )


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise KctlError(f"cannot write {path}: {exc.strerror}", ExitCode.INVALID_INPUT) from None

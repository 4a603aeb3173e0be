"""The timeline picture of `kctl report`, drawn with matplotlib and saved as SVG.

One panel per partition, each two charts on one time axis: above, every replica's log end
offset, the high watermark and the last stable offset; below, the ISR size against
min.insync.replicas, shaded red while acks=all produce is refused. Leader changes are
dashed vertical lines labelled with the new leader and its epoch, faults (a broker paused,
dead or throttled) are shaded bands across every chart; from a `kctl verify` history, the
faults its nemesis injected are hatched bands and the anomalies red lines. Text stays text in
the SVG (not glyph outlines), and the drawn things carry ids (fault-…, leader-change-…,
under-min-isr-…, injected-…, anomaly-…), so a page can be searched and a test can read the SVG.
"""

from __future__ import annotations

import io
import math
import time

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, StrMethodFormatter
from matplotlib.transforms import blended_transform_factory

from kctl.report.history import Anomaly, Findings, Injected
from kctl.report.recording import FAULT_WORDS, Fault, PartitionTimeline, Recording

FAULT_COLOURS = {
    "paused": "#f0a030",
    "isolated": "#b040b0",
    "dead": "#d03030",
    "shutting-down": "#909090",
    "throttled": "#e0d040",
    "cut": "#8050d0",
    "loss": "#30a0a0",
}
HIGH_WATERMARK = "#111111"
LAST_STABLE_OFFSET = "#7b3fa0"
ISR = "#1f5fbf"
MIN_ISR = "#d03030"
LEADER_CHANGE = "#555555"
ANOMALY = "#e00000"
INJECTED = "#777777"
PANEL_HEIGHT_IN = 3.4
LABEL_CHAR_PT = 8 * 0.62  # the width of a character of fault words (8 pt), about
WIDTH_IN = 13.0


def svg(recording: Recording, timelines: list[PartitionTimeline], findings: Findings) -> str:
    """The picture as an SVG document."""
    with matplotlib.rc_context(
        {
            "svg.fonttype": "none",  # <text> elements, not paths: searchable, and small
            "svg.hashsalt": "kctl-report",  # the same recording draws the same file
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    ):
        figure = draw(recording, timelines, findings)
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": "kctl report"})
    return out.getvalue()


def draw(recording: Recording, timelines: list[PartitionTimeline], findings: Findings) -> Figure:
    figure = Figure(figsize=(WIDTH_IN, 1.3 + PANEL_HEIGHT_IN * len(timelines)), layout="constrained")
    grid = figure.add_gridspec(2 * len(timelines), 1, height_ratios=[3, 1] * len(timelines))
    t0 = recording.start
    span = max(recording.end - t0, 1.0)
    rows = label_rows(recording.faults, t0, span)
    first: Axes | None = None
    brokers: set[int] = set()
    for index, timeline in enumerate(timelines):
        offsets = figure.add_subplot(grid[2 * index], sharex=first)
        first = first or offsets
        isr = figure.add_subplot(grid[2 * index + 1], sharex=first)
        brokers |= set(timeline.log_end_offsets)
        _offsets(offsets, timeline, t0)
        _isr(isr, timeline, t0)
        _faults(offsets, recording.faults, t0, f"{index}-offsets", rows)
        _faults(isr, recording.faults, t0, f"{index}-isr", None)
        _injected(offsets, findings.injected, t0, f"{index}-offsets", labelled=False)
        _injected(isr, findings.injected, t0, f"{index}-isr", labelled=True)
        mine = [a for a in findings.anomalies if a.concerns(timeline.topic, timeline.partition)]
        _anomalies(offsets, mine, t0, f"{index}-offsets", labelled=True)
        _anomalies(isr, mine, t0, f"{index}-isr", labelled=False)
        _leader_changes(offsets, isr, timeline, t0)
        offsets.tick_params(labelbottom=False)
        isr.tick_params(labelbottom=index == len(timelines) - 1)
    assert first is not None
    first.set_xlim(0, span)
    figure.axes[-1].set_xlabel(f"seconds since {_clock(t0)} (the first moment recorded)")
    figure.suptitle(
        f"{recording.path.name}: {recording.moments} moments recorded by kctl watch, "
        f"{_clock(t0)} to {_clock(recording.end)}",
        fontsize=11,
    )
    figure.legend(
        handles=_legend(sorted(brokers), recording.faults, findings), loc="outside lower center", ncols=6
    )
    return figure


def broker_colour(broker: int) -> str:
    palette = ["#1f77b4", "#2ca02c", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f"]
    return palette[(broker - 1) % len(palette)]


def _offsets(axes: Axes, timeline: PartitionTimeline, t0: float) -> None:
    x = [t - t0 for t in timeline.times]
    for broker, ends in sorted(timeline.log_end_offsets.items()):
        axes.step(x, _values(ends), where="post", color=broker_colour(broker), linewidth=3.2, alpha=0.55)
    axes.step(x, _values(timeline.high_watermark), where="post", color=HIGH_WATERMARK, linewidth=1.3)
    axes.step(
        x,
        _values(timeline.last_stable_offset),
        where="post",
        color=LAST_STABLE_OFFSET,
        linewidth=1.3,
        linestyle=":",
    )
    axes.set_ylabel("offset")
    axes.set_ylim(bottom=0)
    axes.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    leader = timeline.leaders[0] if timeline.leaders else -1
    axes.set_title(
        f"{timeline.name}: leader {_leader(leader)}, epoch {timeline.epochs[0] if timeline.epochs else '?'} "
        "at the start",
        loc="left",
        fontsize=10,
        fontweight="bold",
    )


def _isr(axes: Axes, timeline: PartitionTimeline, t0: float) -> None:
    x = [t - t0 for t in timeline.times]
    size = _values(timeline.isr_size)
    need = _values(timeline.min_insync_replicas)
    axes.step(x, size, where="post", color=ISR, linewidth=1.8)
    axes.step(x, need, where="post", color=MIN_ISR, linewidth=1.2, linestyle="--")
    below = [not math.isnan(n) and not math.isnan(s) and s < n for s, n in zip(size, need)]
    # a step lasts until the next moment: shade up to the moment the ISR was back
    under = [b or (i > 0 and below[i - 1]) for i, b in enumerate(below)]
    if any(under):
        band = axes.fill_between(x, 0, size, where=under, step="post", color=MIN_ISR, alpha=0.25, linewidth=0)
        band.set_gid(f"under-min-isr-{timeline.topic}-{timeline.partition}")
    top = max([len(timeline.log_end_offsets), *(n for n in timeline.isr_size if n is not None), 1])
    axes.set_ylim(0, top + 0.5)
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylabel("ISR size")


def _leader_changes(offsets: Axes, isr: Axes, timeline: PartitionTimeline, t0: float) -> None:
    """A dashed line on both charts, labelled on the upper one with the new leader and epoch."""
    at_top = blended_transform_factory(offsets.transData, offsets.transAxes)
    for change in timeline.leader_changes:
        x = change.time - t0
        gid = f"leader-change-{timeline.topic}-{timeline.partition}-epoch-{change.epoch}"
        for axes, chart in ((offsets, "offsets"), (isr, "isr")):
            axes.axvline(x, color=LEADER_CHANGE, linestyle="--", linewidth=1).set_gid(f"{gid}-line-{chart}")
        label = f"leader {_leader(change.leader)}, epoch {change.epoch}" + (
            " (unclean)" if change.unclean else ""
        )
        offsets.text(x, 0.97, label, transform=at_top, rotation=90, ha="right", va="top", fontsize=8, gid=gid)


def _faults(axes: Axes, faults: list[Fault], t0: float, chart: str, rows: list[int] | None) -> None:
    """A band per fault; given label rows, also its words in that row, from the bottom. Ids
    name the fault (broker, kind, its index) and then the chart (panel, which chart)."""
    at_bottom = blended_transform_factory(axes.transData, axes.transAxes)
    for index, fault in enumerate(faults):
        gid = f"fault-broker-{fault.broker}-{fault.kind}-{index}-{chart}"
        colour = FAULT_COLOURS.get(fault.kind, "#909090")
        axes.axvspan(fault.start - t0, fault.end - t0, color=colour, alpha=0.18, linewidth=0, gid=gid)
        if rows is not None:
            axes.text(
                fault.start - t0,
                0.04 + 0.09 * rows[index],
                _fault_words(fault),
                transform=at_bottom,
                fontsize=8,
                color="#333333",
                gid=gid + "-label",
            )


def _fault_words(fault: Fault) -> str:
    return f" broker {fault.broker} {FAULT_WORDS.get(fault.kind, fault.kind)} {fault.detail}".rstrip()


def label_rows(faults: list[Fault], t0: float, span: float) -> list[int]:
    """A row for each fault's words, so that no two overlap: a row is free again after both
    the band and its words end (the words' width estimated from their length)."""
    seconds_per_char = span * LABEL_CHAR_PT / (WIDTH_IN * 72 * 0.88)
    free_from: list[float] = []
    rows = []
    for fault in faults:
        start = fault.start - t0
        end = max(fault.end - t0, start + len(_fault_words(fault)) * seconds_per_char)
        row = next((i for i, free in enumerate(free_from) if free <= start), len(free_from))
        if row == len(free_from):
            free_from.append(end)
        free_from[row] = end
        rows.append(row)
    return rows


def _anomalies(axes: Axes, anomalies: list[Anomaly], t0: float, chart: str, labelled: bool) -> None:
    """A red line at each anomaly, named on the offset chart."""
    at_top = blended_transform_factory(axes.transData, axes.transAxes)
    for index, anomaly in enumerate(anomalies):
        x = anomaly.time - t0
        axes.axvline(x, color=ANOMALY, linewidth=1.6, gid=f"anomaly-{index}-{chart}")
        if labelled:
            axes.text(
                x,
                0.5,
                f" {anomaly.label}",
                transform=at_top,
                color=ANOMALY,
                fontsize=8,
                rotation=90,
                va="center",
                gid=f"anomaly-{index}-{chart}-label",
            )


def _injected(axes: Axes, injected: list[Injected], t0: float, chart: str, labelled: bool) -> None:
    """A hatched band per fault the nemesis injected, named on the ISR chart ("pause 2")."""
    at_bottom = blended_transform_factory(axes.transData, axes.transAxes)
    for index, fault in enumerate(injected):
        gid = f"injected-{fault.kind}-broker-{fault.broker}-{index}-{chart}"
        axes.axvspan(
            fault.start - t0,
            fault.end - t0,
            facecolor="none",
            edgecolor=INJECTED,
            hatch="///",
            linewidth=0,
            gid=gid,
        )
        if labelled:
            axes.text(
                fault.start - t0,
                0.04,
                f" {fault.kind} {fault.broker}",
                transform=at_bottom,
                va="bottom",
                fontsize=7,
                color="#444444",
                gid=gid + "-label",
            )


def _legend(brokers: list[int], faults: list[Fault], findings: Findings) -> list:
    handles: list = [
        Line2D([], [], color=broker_colour(b), linewidth=3.2, alpha=0.55, label=f"broker {b} log end")
        for b in brokers
    ]
    handles += [
        Line2D([], [], color=HIGH_WATERMARK, linewidth=1.3, label="high watermark"),
        Line2D([], [], color=LAST_STABLE_OFFSET, linewidth=1.3, linestyle=":", label="last stable offset"),
        Line2D([], [], color=ISR, linewidth=1.8, label="ISR size"),
        Line2D([], [], color=MIN_ISR, linewidth=1.2, linestyle="--", label="min.insync.replicas"),
        Patch(color=MIN_ISR, alpha=0.25, label="ISR < min.insync.replicas: acks=all refused"),
        Line2D([], [], color=LEADER_CHANGE, linestyle="--", linewidth=1, label="leader change (new epoch)"),
    ]
    for kind in sorted({f.kind for f in faults}):
        handles.append(
            Patch(
                color=FAULT_COLOURS.get(kind, "#909090"),
                alpha=0.18,
                label=f"broker {FAULT_WORDS.get(kind, kind)}",
            )
        )
    if findings.injected:
        handles.append(
            Patch(facecolor="none", edgecolor=INJECTED, hatch="///", label="fault injected by kctl verify")
        )
    if findings.anomalies:
        handles.append(Line2D([], [], color=ANOMALY, linewidth=1.6, label="anomaly (kctl verify)"))
    return handles


def _values(series: list[int | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in series]


def _leader(broker: int) -> str:
    return str(broker) if broker >= 0 else "none"


def _clock(moment: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(moment))

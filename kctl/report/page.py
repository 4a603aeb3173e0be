"""The HTML page of `kctl report`: one self-contained file a browser opens from disk.

The timeline SVG is inlined (no scripts, no network, nothing beside the file), followed by
the tables a teacher reads the picture with: the faults and their durations, the changes
`kctl watch` narrated while recording, and the anomalies `kctl verify` found, if any.
"""

from __future__ import annotations

import html
import re
import time

from kctl.report.history import Anomaly, Findings, Injected
from kctl.report.recording import FAULT_WORDS, PartitionTimeline, Recording

MAX_EVENT_ROWS = 2000
_PARTITION_LINE = re.compile(r"(\S+)/(\d+): ")

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
p.summary { color: #555; margin-top: 0; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.8em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
"""


def html_page(
    recording: Recording,
    timelines: list[PartitionTimeline],
    findings: Findings,
    svg: str,
    note: str | None,
) -> str:
    title = f"kctl report: {recording.path.name}"
    names = ", ".join(t.name for t in timelines)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="summary">{recording.moments} moments from {_clock(recording.start)} to '
        f"{_clock(recording.end)} ({recording.end - recording.start:.1f} s); partitions: {html.escape(names)}"
        + (f". {html.escape(note)}" if note else "")
        + "</p>",
        f"<figure>{_inline(svg)}</figure>",
    ]
    parts += _faults(recording)
    parts += _injected(recording.start, findings.injected)
    parts += _anomalies(recording.start, findings.anomalies)
    parts += _events(recording, {(t.topic, t.partition) for t in timelines})
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _inline(svg: str) -> str:
    """The SVG element without the XML prolog and doctype, which HTML does not take."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def _faults(recording: Recording) -> list[str]:
    if not recording.faults:
        return ["<h2>Faults</h2><p>None: every broker was alive and unthrottled throughout.</p>"]
    rows = [
        _row(
            [
                f"broker {f.broker}",
                f"{FAULT_WORDS.get(f.kind, f.kind)} {f.detail}".rstrip(),
                _since(recording.start, f.start),
                _since(recording.start, f.end),
                f"{f.end - f.start:.1f} s",
            ]
        )
        for f in recording.faults
    ]
    return ["<h2>Faults</h2>", _table(["broker", "fault", "from", "to", "for"], rows)]


def _injected(start: float, injected: list[Injected]) -> list[str]:
    if not injected:
        return []
    rows = [
        _row(
            [
                f"broker {f.broker}",
                f.kind,
                _since(start, f.start),
                _since(start, f.end),
                f"{f.end - f.start:.1f} s",
            ]
        )
        for f in injected
    ]
    return ["<h2>Faults injected by kctl verify</h2>", _table(["broker", "fault", "from", "to", "for"], rows)]


def _anomalies(start: float, anomalies: list[Anomaly]) -> list[str]:
    if not anomalies:
        return []
    rows = [
        _row(
            [
                _since(start, a.time),
                a.label,
                "" if a.topic is None else f"{a.topic}" + ("" if a.partition is None else f"/{a.partition}"),
                a.detail,
            ]
        )
        for a in anomalies
    ]
    return ["<h2>Anomalies found by kctl verify</h2>", _table(["at", "anomaly", "partition", "detail"], rows)]


def _events(recording: Recording, drawn: set[tuple[str, int]]) -> list[str]:
    """The narrated changes of the partitions drawn, and those of brokers, the controller and
    groups."""
    title = "<h2>Changes narrated by kctl watch</h2>"
    shown = [(t, line) for t, line in recording.events if _about(line) in drawn or _about(line) is None]
    if not shown:
        return [title, "<p>None.</p>"]
    rows = [_row([_since(recording.start, t), _clock(t), line]) for t, line in shown[:MAX_EVENT_ROWS]]
    more = len(shown) - MAX_EVENT_ROWS
    tail = [f"<p>… and {more} more in the recording.</p>"] if more > 0 else []
    return [title, _table(["at", "clock", "change"], rows), *tail]


def _about(line: str) -> tuple[str, int] | None:
    """The partition a narrated line is about ("payments/0: ..."), or None."""
    match = _PARTITION_LINE.match(line)
    return None if match is None else (match[1], int(match[2]))


def _table(columns: list[str], rows: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>"


def _row(cells: list[str]) -> str:
    return "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"


def _since(start: float, moment: float) -> str:
    return f"{moment - start:.1f} s"


def _clock(moment: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(moment))

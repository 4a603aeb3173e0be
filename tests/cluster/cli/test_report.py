"""`kctl report`: what a hand-made `kctl watch --record` file draws.

The recording is written with the watch's own Recorder: 30 s of one partition (replicas
1,2,3, min.insync.replicas=2) in which broker 2 is paused and drops out of the ISR, leader 1
is killed so broker 3 leads at epoch 1 with an ISR of one (below min.insync.replicas), and
both come back. The SVG is read as XML for what a teacher points at; the HTML page is opened
in a real headless Chromium and its screenshot looked at.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from kctl.report import recording as timelines
from kctl.watch.record import Recorder, seconds
from tests.kctl.cli import run_kctl

pytestmark = pytest.mark.timeout(180)

SVG = "{http://www.w3.org/2000/svg}"
T0 = 1_800_000_000.0
CHROMIUM = "/usr/bin/chromium"
WINDOW = (1400, 900)


def partition(t: float) -> dict:
    """demo/0 at t seconds: 100 records a second while it has a leader that can commit."""
    leader, epoch = (1, 0) if t < 15 else (3, 1)
    isr = [1, 2, 3] if t < 13 else [1, 3] if t < 15 else [3] if t < 22 else [3, 2] if t < 27 else [3, 2, 1]
    end = int(100 * min(t, 15) + (100 * (t - 22) if t >= 22 else 0))
    ends = {"1": end if t < 15 else None, "2": min(end, 1000) if t < 22 else end, "3": end}
    if t >= 27:
        ends["1"] = end
    return {
        "partition": 0,
        "leader": leader,
        "leader_epoch": epoch,
        "partition_epoch": epoch,
        "replicas": [1, 2, 3],
        "isr": isr,
        "log_start_offset": 0,
        "last_stable_offset": end,
        "high_watermark": end,
        "log_end_offsets": ends,
        "open_transactions": [],
        "min_insync_replicas": 2,
        "high_watermark_waiting_ms": 0,
        "truncations": {"1": None, "2": None, "3": None},
        "last_unclean_election": None,
        "last_leader_rebalance": None,
    }


def broker_states(t: float) -> list[dict]:
    states = {1: "dead" if 15 <= t < 25 else "alive", 2: "paused" if 10 <= t < 20 else "alive", 3: "alive"}
    return [
        {"id": b, "host": "127.0.0.1", "port": 9090 + b, "pid": 100 + b, "state": s, "lease_age_s": 0.1}
        for b, s in states.items()
    ]


NARRATED = {
    10.0: ["broker 2: alive -> paused"],
    13.0: ["demo/0: ISR shrank to [1,3]"],
    15.0: [
        "broker 1: alive -> dead",
        "demo/0: leader 1 -> 3, epoch 0 -> 1",
        "demo/0: ISR shrank to [3]",
        "demo/0: ISR of 1 < min.insync.replicas=2: acks=all produce refused (NOT_ENOUGH_REPLICAS)",
    ],
    20.0: ["broker 2: paused -> alive"],
    22.0: ["demo/0: ISR grew to [3,2]", "demo/0: ISR back to min.insync.replicas=2: acks=all accepted again"],
    25.0: ["broker 1: dead -> alive"],
    27.0: ["demo/0: ISR grew to [3,2,1]"],
}


@pytest.fixture
def recording(tmp_path) -> Path:
    path = tmp_path / "failover.jsonl"
    recorder = Recorder(path)
    for step in range(61):
        t = step / 2
        snap = {
            "time": T0 + t,
            "cluster_id": "test",
            "controller": {"broker_id": 3, "epoch": 1},
            "fenced_controller": None,
            "brokers": broker_states(t),
            "security_events": [],
            "topics": [{"topic": "demo", "partitions": [partition(t)]}],
            "groups": [],
            "groups_error": None,
        }
        recorder.write(snap, NARRATED.get(t, []))
    recorder.close()
    return path


def report(*args: str) -> subprocess.CompletedProcess:
    return run_kctl("report", *args, env={"TZ": "UTC"})


def by_id(root: ET.Element) -> dict[str, ET.Element]:
    return {e.get("id"): e for e in root.iter() if e.get("id")}


def texts(element: ET.Element) -> list[str]:
    return ["".join(t.itertext()).strip() for t in element.iter(f"{SVG}text")]


def xs(element: ET.Element) -> list[float]:
    """The x coordinates of the path(s) inside an element of matplotlib's SVG."""
    found = []
    for path in element.iter(f"{SVG}path"):
        numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path.get("d", ""))]
        found += numbers[0::2]
    return found


@pytest.mark.cluster
def test_the_svg_shows_the_leader_change_the_isr_below_min_insync_and_the_fault_bands(recording, tmp_path):
    out = tmp_path / "failover.svg"
    result = report(str(recording), "--svg", str(out))
    assert result.returncode == 0, result.stderr
    root = ET.parse(out).getroot()
    ids = by_id(root)
    words = texts(root)
    assert {"offset", "ISR size", "seconds since 08:00:00 (the first moment recorded)"} <= set(words)
    assert "demo/0: leader 1, epoch 0 at the start" in words
    assert {"high watermark", "last stable offset", "min.insync.replicas", "broker 2 log end"} <= set(words)

    label = ids["leader-change-demo-0-epoch-1"]
    assert texts(label) == ["leader 3, epoch 1"]
    paused = ids["fault-broker-2-paused-0-0-offsets"]
    dead = ids["fault-broker-1-dead-1-0-offsets"]
    assert texts(ids["fault-broker-2-paused-0-0-offsets-label"]) == ["broker 2 paused"]
    assert texts(ids["fault-broker-1-dead-1-0-offsets-label"]) == ["broker 1 down"]
    assert "under-min-isr-demo-0" in ids

    # where they are: the leader change (15 s) inside the paused band (10 s to 20 s), at the
    # start of the dead band (15 s to 25 s); the ISR under min.insync.replicas from 15 s to 22 s
    change = xs(ids["leader-change-demo-0-epoch-1-line-offsets"])[0]
    assert min(xs(paused)) < change < max(xs(paused))
    assert min(xs(dead)) == pytest.approx(change, abs=0.5)
    width = (max(xs(paused)) - min(xs(paused))) / 10  # points per second
    under = xs(ids["under-min-isr-demo-0"])
    assert min(under) == pytest.approx(change, abs=0.5)
    assert max(under) - min(under) == pytest.approx(7 * width, rel=0.05)


@pytest.mark.cluster
def test_the_html_page_renders_in_headless_chromium(recording, tmp_path):
    page = tmp_path / "failover.html"
    result = report(str(recording), "--html", str(page))
    assert result.returncode == 0, result.stderr
    html = page.read_text()
    assert "<svg" in html and "<?xml" not in html
    assert "demo/0: ISR of 1 &lt; min.insync.replicas=2" in html  # the narrated changes, escaped
    assert "<td>broker 2</td><td>paused</td><td>10.0 s</td><td>20.0 s</td><td>10.0 s</td>" in html

    png = screenshot(page, tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png_size(png) == WINDOW
    pixels = image.imread(png)[:, :, :3]
    assert pixels.shape[:2] == (WINDOW[1], WINDOW[0])
    colours = np.unique((pixels * 255).round().astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 100, f"a near-blank page: {len(colours)} colours"
    assert near(pixels, "#1f5fbf") > 200, "no ISR line drawn"  # the chart, not only the tables
    # broker 2's paused band: #f0a030 at 18% over white, between 10 s and 15 s alone
    assert near(pixels, "#fceeda", tolerance=0.02) > 20_000, "no fault band drawn"


def near(pixels: np.ndarray, colour: str, tolerance: float = 0.08) -> int:
    """How many pixels are within `tolerance` (per channel, 0..1) of an #rrggbb colour."""
    target = np.array([int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    return int(np.all(np.abs(pixels - target) <= tolerance, axis=2).sum())


def screenshot(page: Path, tmp_path: Path) -> Path:
    """The page as headless Chromium draws it in a WINDOW-sized viewport."""
    browser = shutil.which("chromium") or CHROMIUM
    png = tmp_path / "screenshot.png"
    result = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            f"--screenshot={png}",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and png.exists(), result.stderr[-2000:]
    return png


def png_size(png: Path) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk, its CRC checked."""
    data = png.read_bytes()
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body, crc = data[16:29], struct.unpack(">I", data[29:33])[0]
    assert zlib.crc32(b"IHDR" + body) == crc
    width, height = struct.unpack(">II", body[:8])
    return width, height


@pytest.mark.cluster
def test_a_report_needs_an_output_and_a_recording(recording, tmp_path):
    nothing = report(str(recording))
    assert nothing.returncode == 2 and "give --html OUT, --svg OUT or both" in nothing.stderr
    missing = report(str(tmp_path / "none.jsonl"), "--svg", str(tmp_path / "x.svg"))
    assert missing.returncode == 4 and "no such recording" in missing.stderr
    other = tmp_path / "other.jsonl"
    other.write_text('{"hello": 1}\n')
    wrong = report(str(other), "--svg", str(tmp_path / "x.svg"))
    assert wrong.returncode == 5 and "other.jsonl:1: not a moment of `kctl watch --record`" in wrong.stderr
    unknown = report(str(recording), "--svg", str(tmp_path / "x.svg"), "--topic", "nope")
    assert (
        unknown.returncode == 4 and "topic 'nope' is not in the recording (recorded: demo)" in unknown.stderr
    )


@pytest.mark.cluster
def test_a_recording_cut_mid_line_is_drawn_up_to_its_last_whole_moment(recording, tmp_path):
    with recording.open("a") as f:
        f.write('{"format":"kctl-watch-moment/1","time":')  # a recorder killed mid-write
    out = tmp_path / "cut.svg"
    result = report(str(recording), "--svg", str(out))
    assert result.returncode == 0, result.stderr
    assert "failover.jsonl: 61 moments recorded by kctl watch" in " ".join(texts(ET.parse(out).getroot()))


@pytest.mark.cluster
def test_many_partitions_are_capped_with_a_message(recording, tmp_path):
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    for doc in lines:
        doc["topics"][0]["partitions"] = [
            dict(doc["topics"][0]["partitions"][0], partition=p) for p in range(12)
        ]
    wide = tmp_path / "wide.jsonl"
    wide.write_text("".join(json.dumps(doc) + "\n" for doc in lines))
    out = tmp_path / "wide.svg"
    result = report(str(wide), "--svg", str(out))
    assert result.returncode == 0, result.stderr
    assert (
        "drew 8 of 12 partitions (demo/0 to demo/7); choose others with --topic and --partition"
        in result.stderr
    )
    panels = [w for w in texts(ET.parse(out).getroot()) if w.endswith("at the start")]
    assert len(panels) == 8
    chosen = tmp_path / "chosen.svg"
    assert report(str(wide), "--svg", str(chosen), "-p", "10", "-p", "11").returncode == 0
    assert [w for w in texts(ET.parse(chosen).getroot()) if w.endswith("at the start")] == [
        "demo/10: leader 1, epoch 0 at the start",
        "demo/11: leader 1, epoch 0 at the start",
    ]


def verify_history(path: Path) -> None:
    """A `kctl verify` history of demo: 40 writes acknowledged, one a second (and three more
    at 15.1 s to 15.3 s, when broker 3 took over), that the final read returned but for those
    three; the nemesis pausing broker 2 from 9.8 s to 19.9 s; and one anomaly line."""
    lines = [{"type": "meta", "version": 1, "topic": "demo", "partitions": 1, "started": iso(T0)}]
    values = [(float(i), str(i)) for i in range(40)] + [(15.1, "lost-a"), (15.2, "lost-b"), (15.3, "lost-c")]
    for offset, (t, value) in enumerate(values):
        lines.append({"type": "send", "time": t - 0.01, "process": "p0", "value": value, "partition": 0})
        lines.append(
            {"type": "ack", "time": t, "process": "p0", "value": value, "partition": 0, "offset": offset}
        )
    lines.append(
        {"type": "poll", "time": 31.0, "process": "final", "records": [[0, i, str(i)] for i in range(40)]}
    )
    lines.append(
        {"type": "final", "time": 31.5, "process": "final", "ends": {"0": 40}, "reached": {"0": True}}
    )
    lines.append({"type": "anomaly", "time": 25.0, "anomaly": "duplicate", "detail": "7 read twice"})
    lines.append(
        {"type": "fault", "time": 9.8, "process": "nemesis", "phase": "start", "kind": "pause", "broker": 2}
    )
    lines.append(
        {"type": "fault", "time": 19.9, "process": "nemesis", "phase": "end", "kind": "pause", "broker": 2}
    )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds")


@pytest.mark.cluster
def test_anomalies_of_a_verify_history_are_marked(recording, tmp_path):
    history = tmp_path / "history.jsonl"
    verify_history(history)
    out, page = tmp_path / "anomalies.svg", tmp_path / "anomalies.html"
    result = report(str(recording), "--svg", str(out), "--html", str(page), "--verify-history", str(history))
    assert result.returncode == 0, result.stderr
    root = ET.parse(out).getroot()
    ids = by_id(root)
    assert texts(ids["anomaly-0-0-offsets-label"]) == ["lost-write x3"]
    assert texts(ids["anomaly-1-0-offsets-label"]) == ["duplicate"]
    assert "anomaly (kctl verify)" in texts(root)
    change = xs(ids["leader-change-demo-0-epoch-1-line-offsets"])[0]
    assert xs(ids["anomaly-0-0-offsets"])[0] == pytest.approx(change, abs=5)  # 0.1 s after it
    injected = ids["injected-pause-broker-2-0-0-isr"]
    assert texts(ids["injected-pause-broker-2-0-0-isr-label"]) == ["pause 2"]
    paused = xs(ids["fault-broker-2-paused-0-0-isr"])  # as the watch saw it: 10 s to 20 s
    assert min(xs(injected)) < min(paused) < max(xs(injected)) < max(paused)
    html = page.read_text()
    assert "<td>broker 2</td><td>pause</td><td>9.8 s</td><td>19.9 s</td><td>10.1 s</td>" in html
    assert "<td>15.1 s</td><td>lost-write x3</td><td>demo/0</td>" in html
    assert "acknowledged at offsets 40..42, not in the final read" in html


@pytest.mark.unit
def test_watch_durations():
    assert (
        seconds("20") == 20 and seconds("20s") == 20 and seconds("1m30s") == 90 and seconds("250ms") == 0.25
    )
    for bad in ("0", "-5", "soon", "5x"):
        with pytest.raises(Exception, match="invalid duration"):
            seconds(bad)


@pytest.mark.unit
def test_two_recordings_appended_to_one_file_are_not_bridged(recording):
    first = recording.read_text().splitlines()
    later = []
    for line in first[20:30]:  # the watch run again a minute later, into the same file
        doc = json.loads(line)
        doc["time"] += 90
        later.append(json.dumps(doc))
    recording.write_text("\n".join(first + later) + "\n")
    read = timelines.read(recording)
    demo = read.partitions[0]
    gap = demo.times.index(T0 + 100) - 1
    assert demo.times[gap] == pytest.approx(T0 + 30.5) and demo.high_watermark[gap] is None
    assert demo.high_watermark[gap - 1] is not None and demo.high_watermark[gap + 1] == 1000
    assert [(f.broker, f.kind, f.start - T0, f.end - T0) for f in read.faults] == [
        (2, "paused", 10, 20),
        (1, "dead", 15, 25),
        (2, "paused", 100, 104.5),  # open when the second recording ended: up to its last moment
    ]


@pytest.mark.cluster
def test_an_unclean_election_is_labelled_so(recording, tmp_path):
    docs = [json.loads(line) for line in recording.read_text().splitlines()]
    for doc in docs:
        p = doc["topics"][0]["partitions"][0]
        if p["leader_epoch"] == 1:
            p.update(leader=2, last_unclean_election={"leader_epoch": 1, "isr": [3]})
    recording.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    out = tmp_path / "unclean.svg"
    assert report(str(recording), "--svg", str(out)).returncode == 0
    assert texts(by_id(ET.parse(out).getroot())["leader-change-demo-0-epoch-1"]) == [
        "leader 2, epoch 1 (unclean)"
    ]

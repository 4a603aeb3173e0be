"""The verdict as a person reads it: a table of the checks (each one's count and its first
examples) and a line of what the run did; or the same as one JSON document."""

from __future__ import annotations

from rich.text import Text

from kctl.shell import console
from kctl.shell.console import Cell, Section
from kctl.verify.checker import CheckResult, Verdict


def section(verdict: Verdict) -> Section:
    title = "valid: no anomalies" if verdict.valid else f"INVALID: {verdict.anomalies} anomalies"
    rows: list[list[Cell]] = [[c.name, _result(c), _examples(c)] for c in verdict.checks]
    return Section(f"kctl verify: {title}", ["check", "result", "first examples, or what it looks for"], rows)


def _result(check: CheckResult) -> Text:
    if check.skipped is not None:
        return Text(f"n/a ({check.skipped})", style="dim")
    if check.count == 0:
        return Text("ok", style="green")
    if not check.bad:
        return Text(f"{check.count} (allowed)", style="yellow")
    return Text(str(check.count), style="bold red")


def _examples(check: CheckResult) -> str:
    return " | ".join(check.examples) if check.examples else check.what


def summary(verdict: Verdict) -> str:
    """One line: what was written, acknowledged and read back, and the faults behind it."""
    s = verdict.stats
    text = (
        f"{s.get('sent', 0)} sent, {s.get('acknowledged', 0)} acknowledged, "
        f"{s.get('failed', 0)} failed (indeterminate), {s.get('polled', 0)} polled by the group, "
        f"{s.get('final_read', 0)} in the final read; {s.get('faults', 0)} faults"
    )
    kinds = [f"{name.removeprefix('faults.')} {n}" for name, n in s.items() if name.startswith("faults.")]
    if kinds:
        text += f" ({', '.join(kinds)})"
    if s.get("txn_committed") or s.get("txn_aborted") or s.get("txn_unknown"):
        text += (
            f"; transactions: {s.get('txn_committed', 0)} committed, {s.get('txn_aborted', 0)} aborted, "
            f"{s.get('txn_unknown', 0)} unknown"
        )
    return text


def show(verdict: Verdict, json_output: bool) -> None:
    """The verdict on stdout: the table and the summary, or JSON."""
    if json_output:
        console.print_json(verdict.to_json())
        return
    console.print_section(section(verdict))
    console.stdout().print(summary(verdict), highlight=False)

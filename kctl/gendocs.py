"""Generate man pages and shell completions from the command tree.

    python -m kctl.gendocs [OUTPUT_DIR]     (default: the source tree holding this package)

writes `man/kctl*.1` (one page per command) and `completions/` for bash, zsh and fish. All
of it comes from Click's metadata of the Typer app, so the docs cannot describe options
that do not exist; a test regenerates them and fails when the committed copies are stale.
"""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout
from importlib.metadata import version
from pathlib import Path

import typer
from typer.completion import shell_complete

from kctl.main import app
from kctl.shell.exit_codes import table

Command = typer.core.TyperCommand | typer.core.TyperGroup

PROG = "kctl"
COMPLETE_VAR = "_KCTL_COMPLETE"
COMPLETION_FILES = {"bash": "kctl.bash", "zsh": "_kctl", "fish": "kctl.fish"}
ENVIRONMENT = [
    ("KCTL_BOOTSTRAP", "Brokers to contact (HOST:PORT[,...]) when -b is not given."),
    (
        "KCTL_HOME",
        "Local cluster directory when --dir is not given; default ~/.kctl. It holds "
        "state/ (shared cluster state) and brokers/ID/ (each broker's data/ and broker.log).",
    ),
    ("KCTL_TIMEOUT", "Default for --timeout, in seconds."),
    (
        "KCTL_COMMAND_CONFIG",
        "Default for --command-config: a client properties file (librdkafka "
        "KEY=VALUE lines, as kcat -F reads them), e.g. a user's SASL credentials.",
    ),
    ("NO_COLOR", "Disable colour; output that is not a terminal never has colour."),
]


def walk(command: Command, ctx: typer.Context) -> list[tuple[Command, typer.Context]]:
    """Every command below (and including) `command`, parents first."""
    found = [(command, ctx)]
    for name, sub in _subcommands_of(command, ctx):
        found += walk(sub, typer.Context(sub, info_name=name, parent=ctx))
    return found


def _subcommands_of(command: Command, ctx: typer.Context) -> list[tuple[str, Command]]:
    if not isinstance(command, typer.core.TyperGroup):
        return []
    subs = [(name, command.get_command(ctx, name)) for name in command.list_commands(ctx)]
    # Typer makes every command a TyperCommand or TyperGroup, typed as a Click Command.
    return [(name, sub) for name, sub in subs if isinstance(sub, Command) and not sub.hidden]


def roff(text: str) -> str:
    """Escape text for roff: backslashes, and lines that would start with a control character."""
    lines = text.replace("\\", "\\e").splitlines()
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in lines)


def man_page(command: Command, ctx: typer.Context) -> str:
    words = ctx.command_path.split()
    name = "-".join(words)
    summary = (command.short_help or (command.help or "").split("\n")[0]).rstrip(".")
    out = [
        f'.TH "{name.upper()}" 1 "" "{PROG} {version(PROG)}" "kctl manual"',
        ".SH NAME",
        f"{name} \\- {roff(summary)}",
        ".SH SYNOPSIS",
        f".B {' '.join(words)}",
        roff(_synopsis(command)),
    ]
    if command.help:
        out += [".SH DESCRIPTION", _paragraphs(command.help)]
    out += _options(command, ctx)
    out += _subcommands(command, ctx, name)
    if len(words) == 1:
        out += [".SH ENVIRONMENT"] + [f".TP\n.B {var}\n{roff(text)}" for var, text in ENVIRONMENT]
    out += [".SH EXIT STATUS"] + [f".TP\n.B {code}\n{roff(text)}" for code, text in table()]
    see_also = [f"{PROG}(1)"] if len(words) > 1 else []
    out += [".SH SEE ALSO", ", ".join(see_also + ["kcat(1)", "rpk(1)"])]
    return "\n".join(out) + "\n"


def _synopsis(command: Command) -> str:
    pieces = ["[OPTIONS]"]
    for param in command.params:
        if param.param_type_name == "argument":
            metavar = (param.metavar or param.name or "").upper()
            pieces.append(metavar if param.required else f"[{metavar}]")
    if hasattr(command, "list_commands"):
        pieces.append("COMMAND [ARGS]...")
    return " ".join(pieces)


def _paragraphs(text: str) -> str:
    return "\n.PP\n".join(roff(p.strip()) for p in text.split("\n\n") if p.strip())


def _options(command: Command, ctx: typer.Context) -> list[str]:
    records = [p.get_help_record(ctx) for p in command.get_params(ctx)]
    shown = [r for r in records if r is not None]
    if not shown:
        return []
    out = [".SH OPTIONS"]
    for terms, text in shown:
        out += [".TP", "\\fB" + roff(terms).replace("-", "\\-") + "\\fR", roff(text)]
    return out


def _subcommands(command: Command, ctx: typer.Context, name: str) -> list[str]:
    subs = _subcommands_of(command, ctx)
    out = [".SH COMMANDS"] if subs else []
    for sub_name, sub in subs:
        out += [
            ".TP",
            f".B {sub_name}",
            roff(sub.get_short_help_str(limit=200)),
            f"See {name}-{sub_name}(1).",
        ]
    return out


def completion_script(command: Command, shell: str) -> str:
    """Exactly what `_KCTL_COMPLETE=source_<shell> kctl` prints: Typer's script for `shell`,
    which calls back into kctl for the completions themselves."""
    captured = io.StringIO()
    with redirect_stdout(captured):
        shell_complete(command, {}, PROG, COMPLETE_VAR, f"source_{shell}")
    return captured.getvalue().rstrip("\n") + "\n"


def generate(out_dir: Path) -> list[Path]:
    """Write every man page and completion file below `out_dir`; returns the paths written."""
    root = typer.main.get_command(app)
    assert isinstance(root, typer.core.TyperGroup)  # the app of several commands
    files: dict[Path, str] = {}
    for command, ctx in walk(root, typer.Context(root, info_name=PROG, **root.context_settings)):
        files[Path("man") / f"{ctx.command_path.replace(' ', '-')}.1"] = man_page(command, ctx)
    for shell, filename in COMPLETION_FILES.items():
        files[Path("completions") / filename] = completion_script(root, shell)
    for relative, text in files.items():
        path = out_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return sorted(files)


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    for relative in generate(out_dir):
        print(out_dir / relative)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

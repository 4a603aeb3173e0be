"""`python -m kctl`: the same CLI without relying on PATH."""

from kctl.main import app

app(prog_name="kctl")

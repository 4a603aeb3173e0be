"""`python -m kctl`: the same CLI without relying on PATH."""

from kctl.executable import main

main()

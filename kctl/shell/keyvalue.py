"""`k=v` option values (-X, -c, -H, --set), parsed in one place so every option errs alike."""

from __future__ import annotations

from kctl.shell.errors import KctlError
from kctl.shell.exit_codes import ExitCode


def parse_pairs(items: list[str] | None, option: str) -> list[tuple[str, str]]:
    """Split each `key=value` at the first '='; the value may be empty, the key may not."""
    pairs = []
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise KctlError(f"invalid {option} {item!r}: expected KEY=VALUE", ExitCode.INVALID_INPUT)
        pairs.append((key, value))
    return pairs

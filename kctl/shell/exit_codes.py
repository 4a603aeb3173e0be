"""Every exit code kctl can return, in one place.

Scripts branch on these numbers, so they are part of kctl's interface: the same table feeds
`kctl --help` and the man pages, and nothing else in kctl invents a code.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    UNREACHABLE = 3
    NOT_FOUND = 4
    INVALID_INPUT = 5
    CONFLICT = 6
    NOT_AUTHORIZED = 7
    UNHEALTHY = 10
    ANOMALIES = 11
    INTERRUPTED = 130
    BROKEN_PIPE = 141


MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.ERROR: "error (including failed deliveries that fit no other code)",
    ExitCode.USAGE: "usage error: unknown option, missing or conflicting arguments",
    ExitCode.UNREACHABLE: "cluster unreachable, no local cluster, or a request timed out",
    ExitCode.NOT_FOUND: "unknown topic, partition, group, broker or user",
    ExitCode.INVALID_INPUT: "invalid input: bad offset or format, record too large, invalid name or config",
    ExitCode.CONFLICT: "refused in the current state: a group with active members, a broker "
    "already dead or already running, a transactional producer fenced by a newer one, "
    "a partition with no replica that may be elected leader, a network fault this machine "
    "cannot make (no nftables or no CAP_NET_ADMIN, no tc netem for --delay)",
    ExitCode.NOT_AUTHORIZED: "not authorized: authentication failed (wrong credentials or security "
    "settings), or no ACL allows the principal the operation",
    ExitCode.UNHEALTHY: "cluster unhealthy: a planned broker is down or paused, or there is no controller",
    ExitCode.ANOMALIES: "`kctl verify` found anomalies: lost, duplicated or misordered records, reads "
    "of aborted or uncommitted transactions",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
    ExitCode.BROKEN_PIPE: "the reader of stdout went away (e.g. `| head`), as if killed by SIGPIPE",
}


def table() -> list[tuple[int, str]]:
    """(code, meaning) rows, for help texts and man pages."""
    return [(int(code), MEANINGS[code]) for code in ExitCode]

"""`python -m brokerd.launch`: start brokers of a local cluster from one interpreter.

Importing brokerd costs about 0.45 s of CPU, most of a broker's start; a launcher imports it
once and forks each broker from it, so `kctl cluster up` with three brokers pays one import,
not three. Each broker is a daemon as `brokerd` run alone would be: its own session, standard
input from /dev/null, output appended to its log, and `brokerd ARGS` as its command line in ps.

The protocol, on standard input and output, one line each:
  in:  a JSON list of brokers, each {"argv": [brokerd's arguments], "log": path}
  out: `started INDEX PID` for each broker as it is forked, then `exited INDEX CODE` for each
       that ends while the launcher still runs (CODE as subprocess gives it: -9 for SIGKILL)
The launcher runs until its standard input is closed (at once when nothing was asked for:
it is started ahead, while the caller prepares); the brokers live on after it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import traceback

from setproctitle import setproctitle

from brokerd.main import main as run_broker

REAP_INTERVAL_S = 0.02


def fork_broker(argv: list[str], log_path: str) -> int:
    """The pid of a new broker process running brokerd's entry point with ``argv``."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        os.setsid()
        # signals the caller held back while it started us (kctl's lessons defer Ctrl-C and
        # SIGTERM around it) are the broker's own: SIGTERM is how it is asked to stop
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        setproctitle(" ".join(["brokerd", *argv]))  # what ps shows, as for a brokerd run alone
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.close(stdin)
        output_to(log_path)
        code = run_broker(argv)
    except SystemExit as refusal:  # argparse's refusal of an argument (2)
        code = refusal.code if isinstance(refusal.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def output_to(log_path: str) -> None:
    """This process's standard output and error appended to a broker's log."""
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)


def report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def reap(started: dict[int, int]) -> None:
    """Report every broker (pid -> index) that has ended, and forget it."""
    while started:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        if pid in started:
            report(f"exited {started.pop(pid)} {os.waitstatus_to_exitcode(status)}")


def main() -> int:
    line = sys.stdin.readline()
    if not line:
        return 0  # the caller went away before asking for any broker
    brokers = json.loads(line)
    started: dict[int, int] = {}
    for index, broker in enumerate(brokers):
        pid = fork_broker([str(arg) for arg in broker["argv"]], str(broker["log"]))
        started[pid] = index
        report(f"started {index} {pid}")
    while started:
        readable, _, _ = select.select([sys.stdin], [], [], REAP_INTERVAL_S)
        if readable and not sys.stdin.readline():
            break  # the caller is done with us
        reap(started)
    return 0


if __name__ == "__main__":
    # no interpreter teardown: freeing all of brokerd would only keep the caller waiting
    code = main()
    sys.stdout.flush()
    os._exit(code)

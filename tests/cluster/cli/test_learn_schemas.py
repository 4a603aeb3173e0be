"""`kctl learn run schemas` on real brokers and the lesson cluster's own schema registry: v2 (a
field with a default) is accepted, v3 (a field without one) is refused by `kctl produce` with
exit 6 and the registry's reason naming the field, the old consumer reads every record, and
the registry stops with the lesson's cluster, also when the learner presses Ctrl-C.
"""

from __future__ import annotations

import re
import signal
import subprocess

import pytest

from tests.cluster.cli.lesson_harness import lesson_processes, processes_under, run_lesson
from tests.cluster_harness import wait_until
from tests.kctl.cli import kctl_command, kctl_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

LESSON_TIMEOUT_S = 180.0
RIGHT_ANSWERS = "b,b,b"


def test_v2_is_accepted_v3_refused_naming_the_field_and_the_old_consumer_reads_everything(learner, tmp_path):
    notes = tmp_path / "schemas.md"
    text = run_lesson("schemas", RIGHT_ANSWERS, learner, notes, LESSON_TIMEOUT_S)
    assert "`$ kctl schema register orders-value order-v2.avsc` → registered orders-value version 2" in text
    refused = re.search(
        r"`\$ kctl produce orders --value-schema order-v3\.avsc < orders-v3\.jsonl` → "
        r"(kctl: error: [^\n]*?) \(exit (\d+)\); the registry's own answer to registering v3: HTTP (\d+)",
        text,
    )
    assert refused is not None, text
    error, code, status = refused.groups()
    assert (code, status) == ("6", "409")
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in error and "The field 'customer'" in error
    assert "orders-value has versions [1, 2]; orders ended at 5 before and 5 after" in text
    assert "the old consumer read 6 of the 6 records (o-1, o-2, o-3, o-4, o-5, o-6)" in text
    assert "0 it could not read" in text
    assert text.count("**Check (✔ held):**") == 5 and "did NOT hold" not in text
    assert "Predictions: 3 of 3 right." in text
    assert lesson_processes(tmp_path) == []
    assert list((tmp_path / "tmp").iterdir()) == []


def test_ctrl_c_stops_the_lessons_schema_registry_with_its_brokers(learner, tmp_path):
    proc = subprocess.Popen(
        kctl_command("learn", "run", "schemas", "--auto"),
        env=kctl_env(learner),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: processes_under(tmp_path, b"schemaregistry"), 60, "the lesson's schema registry")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err.decode()
    assert lesson_processes(tmp_path) == []
    assert list((tmp_path / "tmp").iterdir()) == []

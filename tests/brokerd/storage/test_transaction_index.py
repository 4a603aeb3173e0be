import struct

import pytest

from brokerd.storage.transaction_index import AbortedTxn, TransactionIndex

pytestmark = pytest.mark.unit

PATH = "00000000000000000100.txnindex"


def test_entries_are_34_bytes_in_kafkas_format(tmp_path):
    index = TransactionIndex(tmp_path / PATH, 100)
    assert not index.path.exists()  # created with the first abort
    index.append(AbortedTxn(4000, 100, 110, 111))
    index.append(AbortedTxn(4001, 105, 120, 106))
    data = index.path.read_bytes()
    assert len(data) == 68
    assert data[:34] == bytes.fromhex("00000000000000000fa00000000000000064000000000000006e000000000000006f")
    assert struct.unpack(">hqqqq", data[34:]) == (0, 4001, 105, 120, 106)
    assert TransactionIndex(index.path, 100).entries == index.entries


def test_entries_must_follow_in_marker_order(tmp_path):
    index = TransactionIndex(tmp_path / PATH, 100)
    index.append(AbortedTxn(1, 100, 110, 111))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 100, 110, 111))


def test_collect_finds_transactions_overlapping_the_range(tmp_path):
    index = TransactionIndex(tmp_path / PATH, 100)
    for txn in [AbortedTxn(1, 100, 104, 102), AbortedTxn(2, 102, 110, 108), AbortedTxn(3, 108, 120, 121)]:
        index.append(txn)
    assert index.collect(105, 107) == ([AbortedTxn(2, 102, 110, 108)], True)
    assert index.collect(100, 102) == ([AbortedTxn(1, 100, 104, 102)], True)
    assert index.collect(111, 200) == ([AbortedTxn(3, 108, 120, 121)], False)
    assert index.collect(121, 200) == ([], False)
    # the second entry proves nothing after 108 can start before 108; the third is not read
    assert index.collect(103, 108)[1] is True and len(index.collect(103, 108)[0]) == 2


def test_truncation_drops_transactions_aborted_at_or_after_the_offset(tmp_path):
    index = TransactionIndex(tmp_path / PATH, 100)
    index.append(AbortedTxn(1, 100, 104, 105))
    index.append(AbortedTxn(2, 102, 110, 111))
    index.truncate_to(110)
    assert index.entries == [AbortedTxn(1, 100, 104, 105)]
    assert len(index.path.read_bytes()) == 34
    index.truncate_to(50)
    assert index.entries == [] and not index.path.exists()


def test_a_torn_last_entry_is_ignored(tmp_path):
    index = TransactionIndex(tmp_path / PATH, 100)
    index.append(AbortedTxn(1, 100, 104, 105))
    with open(index.path, "ab") as file:
        file.write(b"\0" * 20)
    assert TransactionIndex(index.path, 100).entries == [AbortedTxn(1, 100, 104, 105)]


def test_delete_removes_the_file(tmp_path):
    index = TransactionIndex(tmp_path / PATH, 100)
    index.append(AbortedTxn(1, 100, 104, 105))
    index.delete()
    assert not index.path.exists()

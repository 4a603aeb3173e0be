"""`kctl verify` (verify.py): Jepsen on a laptop.

A workload of real clients (workload), a nemesis breaking the local cluster's brokers
(nemesis), the history they write (history), the checks over it, pure functions that need
no cluster (checker), and the verdict a person or a script reads (verdict).
"""

"""What a client of the local cluster reads to find its brokers: the cluster's plan, the
brokers' registrations and the network faults that cut some of them off from clients.

A narrow view of the state directory for short commands (`kctl produce`, `kctl consume`),
which need the brokers' addresses and nothing of the metadata log.
"""

from __future__ import annotations

from brokerd.state.broker_registrations import BrokerRegistrations
from brokerd.state.cluster_plan import ClusterPlan
from brokerd.state.faults import InjectedFaults


class LocalBrokers(ClusterPlan, BrokerRegistrations, InjectedFaults):
    """The brokers of the cluster in a directory, as registered (see ClusterState for the rest)."""

"""`kctl cluster` (cluster.py) and `kctl broker` (broker.py): the local cluster on this machine,
its brokerd daemons, and the state they publish.

Starting, waiting for and stopping the daemons (localcluster); faults on one broker
(brokerctl); what kctl says about each broker, and the broker table (brokerview); the broker
settings a cluster was started with and its security set-up (brokerconfig, securecluster;
certificates for TLS come from tls); adding and draining brokers (scaling); the metadata log in
words (metadatalog); one moment of the cluster read from its state directory (snapshot,
securityevents), which `kctl watch` and `kctl topic describe` show too.
"""

"""`kctl connect`: the connect worker beside a cluster, and a client of its REST API."""

"""`kctl rest-proxy`: the REST proxy daemon, for a cluster kctl did not start."""

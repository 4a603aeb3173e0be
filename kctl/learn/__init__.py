"""`kctl learn`: guided lessons on real brokers (kctl/learn/learn.py)."""
